#!/bin/sh
exec go run google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11 "$@"
