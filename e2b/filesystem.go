package e2b

import (
	"context"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	pb "rung.dev/rung/e2b/envdpb/filesystem"
	"rung.dev/rung/e2b/envdpb/filesystem/filesystemconnect"
)

// filesystemService is envd's filesystem.Filesystem over the controller's
// file view; watching is in watch.go.
type filesystemService struct {
	s *Server
}

var _ filesystemconnect.FilesystemHandler = (*filesystemService)(nil)

// sandboxUser owns every file rung writes for the sandbox's user (files
// written through the API or the isolate tier belong to it).
const sandboxUser = "user"

func entryOf(fi controller.FileInfo) *pb.EntryInfo {
	perm, _ := strconv.ParseUint(fi.Mode, 8, 32)
	mode := fs.FileMode(perm)
	e := &pb.EntryInfo{
		Name: fi.Name, Path: e2bPath(fi.Path), Size: fi.Size, Owner: sandboxUser, Group: sandboxUser,
		ModifiedTime: timestamppb.New(fi.ModTime),
	}
	switch fi.Type {
	case "file":
		e.Type = pb.FileType_FILE_TYPE_FILE
	case "dir":
		e.Type, mode = pb.FileType_FILE_TYPE_DIRECTORY, mode|fs.ModeDir
	case "symlink":
		// envd reports the target as an absolute path: a relative one
		// is resolved against the link's directory.
		e.Type, mode = pb.FileType_FILE_TYPE_SYMLINK, mode|fs.ModeSymlink
		t := fi.Target
		if !path.IsAbs(t) {
			t = path.Join(path.Dir(fi.Path), t)
		}
		t = e2bPath(t)
		e.SymlinkTarget = &t
	}
	e.Mode, e.Permissions = uint32(perm), mode.String()
	return e
}

func (f *filesystemService) Stat(ctx context.Context, req *connect.Request[pb.StatRequest]) (*connect.Response[pb.StatResponse], error) {
	c, err := f.s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	var fi controller.FileInfo
	if p := sandboxPath(req.Msg.GetPath()); inView(p) {
		fi, err = f.s.ctrl.Stat(ctx, c.tenant, c.sandbox, p)
	} else {
		fi, err = f.s.statOutside(ctx, c, p) // outside.go
	}
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	e := entryOf(fi)
	if !inView(fi.Path) {
		return connect.NewResponse(&pb.StatResponse{Entry: e}), nil
	}
	if err := f.s.addMetadata(ctx, c, []string{fi.Path}, []*pb.EntryInfo{e}); err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	return connect.NewResponse(&pb.StatResponse{Entry: e}), nil
}

func (f *filesystemService) ListDir(ctx context.Context, req *connect.Request[pb.ListDirRequest]) (*connect.Response[pb.ListDirResponse], error) {
	c, err := f.s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	depth := max(req.Msg.GetDepth(), 1)
	dir := sandboxPath(req.Msg.GetPath())
	fi, err := f.s.ctrl.Stat(ctx, c.tenant, c.sandbox, dir)
	if err == nil && fi.Type != "dir" {
		err = rung.Errorf(rung.ErrInvalid, "path %s is not a directory", e2bPath(dir))
	}
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	list, err := f.s.ctrl.ListFiles(ctx, c.tenant, c.sandbox, dir, depth > 1)
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	out := &pb.ListDirResponse{}
	var paths []string
	for _, fi := range list {
		rel := strings.TrimPrefix(strings.TrimPrefix(fi.Path, dir), "/")
		if rel == "" || uint32(strings.Count(rel, "/")) >= depth {
			continue
		}
		out.Entries = append(out.Entries, entryOf(fi))
		paths = append(paths, fi.Path)
	}
	if err := f.s.addMetadata(ctx, c, paths, out.Entries); err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	return connect.NewResponse(out), nil
}

func (f *filesystemService) MakeDir(ctx context.Context, req *connect.Request[pb.MakeDirRequest]) (*connect.Response[pb.MakeDirResponse], error) {
	c, err := f.s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	p := sandboxPath(req.Msg.GetPath())
	// envd answers already_exists for a directory that is there; the SDK
	// turns that into makeDir's false.
	if _, err := f.s.ctrl.Stat(ctx, c.tenant, c.sandbox, p); err == nil {
		return nil, connect.NewError(connect.CodeAlreadyExists, errorf("directory %s already exists", e2bPath(p)))
	}
	if err := f.s.ctrl.Mkdir(ctx, c.tenant, c.sandbox, p, true); err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	fi, err := f.s.ctrl.Stat(ctx, c.tenant, c.sandbox, p)
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	return connect.NewResponse(&pb.MakeDirResponse{Entry: entryOf(fi)}), nil
}

func (f *filesystemService) Move(ctx context.Context, req *connect.Request[pb.MoveRequest]) (*connect.Response[pb.MoveResponse], error) {
	c, err := f.s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	to := sandboxPath(req.Msg.GetDestination())
	if err := f.s.ctrl.Move(ctx, c.tenant, c.sandbox, sandboxPath(req.Msg.GetSource()), to); err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	fi, err := f.s.ctrl.Stat(ctx, c.tenant, c.sandbox, to)
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	e := entryOf(fi)
	if err := f.s.addMetadata(ctx, c, []string{to}, []*pb.EntryInfo{e}); err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	return connect.NewResponse(&pb.MoveResponse{Entry: e}), nil
}

func (f *filesystemService) Remove(ctx context.Context, req *connect.Request[pb.RemoveRequest]) (*connect.Response[pb.RemoveResponse], error) {
	c, err := f.s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, f.s.rpcError(ctx, err)
	}
	// envd's Remove, like rm -rf, succeeds when there is nothing to
	// remove.
	if err := f.s.ctrl.RemoveFile(ctx, c.tenant, c.sandbox, sandboxPath(req.Msg.GetPath()), true); err != nil && rung.Code(err) != rung.CodeNotFound {
		return nil, f.s.rpcError(ctx, err)
	}
	return connect.NewResponse(&pb.RemoveResponse{}), nil
}
