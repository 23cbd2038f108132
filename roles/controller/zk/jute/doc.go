// Package jute is the wire encoding of the ZooKeeper client protocol, as
// ZooKeeper 3.5–3.9 clients (the Java client, Curator, kazoo, zkCli,
// github.com/go-zookeeper/zk) speak it: length-prefixed frames, jute's
// big-endian primitives, and the records the client and server exchange.
//
// It is the foundation of corral's ZooKeeper port (issue 20): the server in
// roles/controller/zk will read frames with a FrameReader, tell a
// four-letter word from a connect request with FourLetterWord, decode a
// ConnectRequest and then a RequestHeader plus the body DecodeRequest picks
// by opcode, and answer with ReplyHeader, the response records and
// WatcherEvent, framed by AppendFrame. Nothing uses it yet.
//
// The package knows the encoding only: no sessions, znodes, ACL checks or
// I/O beyond reading frames. Decoding never panics and never allocates more
// than the input justifies: every length and count is checked against the
// bytes that remain before anything is allocated, because the input comes
// from the network and a hostile or broken peer must cost only its own
// connection (the fuzz targets in fuzz_test.go hold it to that).
//
// The numbers (opcodes, error codes, xids, flags) are ZooKeeper's, from
// zookeeper.jute, ZooDefs.java, KeeperException.java and Watcher.java.
package jute
