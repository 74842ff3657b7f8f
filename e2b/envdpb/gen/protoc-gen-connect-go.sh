#!/bin/sh
exec go run connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1 "$@"
