package zk

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// implementedWords are the four-letter words this server answers when
// allowed; the others ZooKeeper knows are refused like disallowed ones.
var implementedWords = map[string]bool{"ruok": true, "srvr": true, "stat": true, "mntr": true, "conf": true, "isro": true}

// allowedWords parses the allow-list; "*" allows every implemented word.
func allowedWords(list []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, w := range list {
		w = strings.TrimSpace(w)
		switch {
		case w == "":
		case w == "*":
			for k := range implementedWords {
				out[k] = true
			}
		case !implementedWords[w]:
			return nil, fmt.Errorf("zk: four-letter word %q is not implemented (have ruok, srvr, stat, mntr, conf, isro)", w)
		default:
			out[w] = true
		}
	}
	return out, nil
}

// fourLetter answers a four-letter word, as ZooKeeper words it.
func (s *Server) fourLetter(word string) string {
	if !s.words[word] {
		return word + " is not executed because it is not in the whitelist.\n"
	}
	switch word {
	case "ruok":
		return "imok"
	case "isro":
		return "rw"
	case "srvr":
		return s.srvr()
	case "stat":
		return s.statWord()
	case "mntr":
		return s.mntr()
	case "conf":
		return s.conf()
	}
	return word + " is not executed because it is not in the whitelist.\n"
}

func (s *Server) mode() string {
	if s.b.IsLeader() {
		return "leader"
	}
	return "follower"
}

func (s *Server) nodeCount() int { return s.allChildrenNumber("/") + 1 }

func (s *Server) srvr() string {
	st := s.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s\n", s.cfg.Version)
	fmt.Fprintf(&b, "Latency min/avg/max: 0/0.0/0\n")
	fmt.Fprintf(&b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: 0\n", st.Received, st.Sent, st.Connections)
	fmt.Fprintf(&b, "Zxid: %#x\nMode: %s\nNode count: %d\n", s.b.AppliedIndex(), s.mode(), s.nodeCount())
	return b.String()
}

// statWord is srvr with the client list first (addresses: opt-in).
func (s *Server) statWord() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s\nClients:\n", s.cfg.Version)
	s.mu.RLock()
	lines := make([]string, 0, len(s.conns))
	for _, c := range s.conns {
		lines = append(lines, fmt.Sprintf(" /%s[1](queued=%d,sid=%s)\n", c.remote, len(c.out), hexID(c.sessionID())))
	}
	s.mu.RUnlock()
	sort.Strings(lines)
	for _, l := range lines {
		b.WriteString(l)
	}
	b.WriteString("\n")
	srvr := s.srvr()
	_, rest, _ := strings.Cut(srvr, "\n")
	b.WriteString(rest)
	return b.String()
}

func (s *Server) mntr() string {
	st := s.Stats()
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "zk_%s\t%v\n", k, v) }
	kv("version", s.cfg.Version)
	kv("server_state", s.mode())
	kv("avg_latency", 0)
	kv("max_latency", 0)
	kv("min_latency", 0)
	kv("packets_received", st.Received)
	kv("packets_sent", st.Sent)
	kv("num_alive_connections", st.Connections)
	kv("outstanding_requests", 0)
	kv("znode_count", s.nodeCount())
	kv("watch_count", st.Watches)
	kv("global_sessions", st.Sessions)
	kv("uptime", time.Since(s.started).Milliseconds())
	return b.String()
}

func (s *Server) conf() string {
	var b strings.Builder
	if addr := s.Addr(); addr != nil {
		fmt.Fprintf(&b, "clientPortAddress=%s\n", addr)
	}
	fmt.Fprintf(&b, "serverId=%s\n", s.cfg.ServerID)
	fmt.Fprintf(&b, "maxClientCnxns=%d\n", s.cfg.MaxConns)
	fmt.Fprintf(&b, "minSessionTimeout=%d\n", s.cfg.MinSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "maxSessionTimeout=%d\n", s.cfg.MaxSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "jute.maxbuffer=%d\n", s.cfg.MaxRequestBytes)
	fmt.Fprintf(&b, "secureClientPort=%t\n", s.cfg.TLS != nil)
	words := make([]string, 0, len(s.words))
	for w := range s.words {
		words = append(words, w)
	}
	sort.Strings(words)
	fmt.Fprintf(&b, "4lw.commands.whitelist=%s\n", strings.Join(words, ","))
	return b.String()
}
