// Package envdpb holds the envd protocol's .proto files, written for rung
// with the E2B SDK's service, method and field names and numbers, and the
// Go code generated from them (subpackages process and filesystem, and
// their Connect stubs). Regenerate with `go generate ./e2b/envdpb` (needs
// protoc; the plugins run through `go run` at pinned versions).
package envdpb

//go:generate protoc --plugin=protoc-gen-go=gen/protoc-gen-go.sh --plugin=protoc-gen-connect-go=gen/protoc-gen-connect-go.sh -I . --go_out=. --go_opt=module=rung.dev/rung/e2b/envdpb --connect-go_out=. --connect-go_opt=module=rung.dev/rung/e2b/envdpb process/process.proto filesystem/filesystem.proto
