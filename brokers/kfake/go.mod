module github.com/kafkalog/kafkalog/brokers/kfake

go 1.26.0

require github.com/twmb/franz-go/pkg/kfake v0.0.0-20260918054303-01f206a7e32c

// franz-go v1.22.3 rather than the v1.21.7 kfake's own go.mod asks for: this kfake calls
// kversion APIs that v1.21.7 lacks.
require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go v1.22.3 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.1 // indirect
)
