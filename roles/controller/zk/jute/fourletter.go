package jute

// fourLetterWords are the commands ZooKeeper recognises at the start of a
// connection (FourLetterCommands.java). Whether the server answers one is
// a matter for its allow-list; recognising it is this package's.
var fourLetterWords = map[[4]byte]bool{}

var knownWords = []string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro",
	"mntr", "ruok", "srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs",
}

func init() {
	for _, w := range knownWords {
		fourLetterWords[[4]byte([]byte(w))] = true
	}
}

// FourLetterWords returns the words ZooKeeper knows, sorted. "stmk" is
// followed by an 8-byte trace mask; the rest stand alone.
func FourLetterWords() []string { return append([]string(nil), knownWords...) }

// FourLetterWord reports whether the first 4 bytes of a connection are a
// four-letter word rather than a frame's length prefix, and which.
//
// ZooKeeper reads those bytes as a big-endian int and checks it against
// the known words before treating it as a length, and only on a
// connection that has not yet sent its connect request; a server must do
// the same. There is no ambiguity in practice: every word, read as a
// length, is over 1.6 GB (the smallest, "conf", is 0x636f6e66), far above
// any sane jute.maxbuffer.
func FourLetterWord(prefix [4]byte) (string, bool) {
	if fourLetterWords[prefix] {
		return string(prefix[:]), true
	}
	return "", false
}
