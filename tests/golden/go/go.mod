module github.com/aophub/aophub/tests/golden/go

go 1.26.0

require (
	github.com/aophub/aophub/gen/go v0.0.0
	google.golang.org/protobuf v1.36.12
)

replace github.com/aophub/aophub/gen/go => ../../../gen/go
