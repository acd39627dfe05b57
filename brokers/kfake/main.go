// Command kfake runs franz-go's in-memory fake Kafka cluster (pkg/kfake) as one broker on
// 127.0.0.1, so that `kafkalog check --wire-broker kfake` can check it over Kafka's protocol.
//
// It prints the bound address as one line, `HOST:PORT`, on stdout once the broker listens, and
// runs until its stdin closes or it receives SIGTERM or SIGINT. Topics are created by the
// checker through CreateTopics, which kfake serves, so none are seeded here.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "loopback port to listen on (0: a free port)")
	flag.Parse()

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake: %v\n", err)
		os.Exit(1)
	}
	defer cluster.Close()
	fmt.Println(cluster.ListenAddrs()[0])

	done := make(chan struct{}, 2)
	go func() {
		// Stdin closing is the parent going away, also when it dies without signalling us.
		_, _ = io.Copy(io.Discard, os.Stdin)
		done <- struct{}{}
	}()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		done <- struct{}{}
	}()
	<-done
}
