module github.com/aophub/aophub

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/coder/websocket v1.8.15
	google.golang.org/protobuf v1.36.12
)
