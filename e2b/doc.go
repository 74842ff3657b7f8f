// Package e2b serves the E2B SDK's two surfaces over rung's controller, so
// that the unmodified `e2b` SDK drives rung when E2B_API_URL and
// E2B_SANDBOX_URL point at it: the REST control plane (sandboxes: create,
// get, list, kill, timeout, pause, resume, connect, snapshots, fork,
// network; X-API-KEY) and envd,
// the in-sandbox daemon's Connect RPC services (process.Process,
// filesystem.Filesystem, in JSON over HTTP/1.1) with its plain /files and
// /health routes.
//
// Like package api it holds no business logic: every request becomes
// controller calls scoped to the caller's tenant, so commands go through
// rung's router and files through its file view. What E2B calls a
// template is a rung image name or a snapshot; E2B metadata is stored as
// labels (keys escaped, see labels.go); the E2B sandbox id is rung's.
//
// E2B's home directory, /home/user, is the sandbox's /workspace: a new
// sandbox whose image has /home/user gets it replaced by a symbolic link
// to /workspace (its dotfiles copied over; controller.CreateRequest's
// LinkWorkspace, done at create without a container, or before a warm
// spare's container starts: see Home), so a file written through
// /files at /home/user/x is the file a command sees there, and relative
// paths resolve against it. See docs/API.md, "E2B compatibility", for what
// is not served yet.
package e2b
