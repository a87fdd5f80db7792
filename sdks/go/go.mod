module github.com/clarify-hitl/clarify/sdks/go

go 1.19
