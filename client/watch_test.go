package client

import (
	"errors"
	"testing"
)

func TestParseWatchLine(t *testing.T) {
	ev, err := parseWatchLine([]byte(`{"type":"put","key":"a","value":"eA==","create_revision":3,"mod_revision":4,"version":2,"lease":7}`))
	if err != nil || ev.Key != "a" || string(ev.Value) != "x" || ev.ModRevision != 4 || ev.Lease != 7 {
		t.Fatalf("put: %+v %v", ev, err)
	}
	if ev, err = parseWatchLine([]byte(`{"type":"progress","revision":9}`)); err != nil || ev.Revision != 9 {
		t.Fatalf("progress: %+v %v", ev, err)
	}
	if _, err = parseWatchLine([]byte(`{"type":"error","code":"compacted","error":"gone"}`)); !errors.Is(err, ErrCompacted) {
		t.Fatalf("compacted: %v", err)
	}
	for _, bad := range []string{`{`, `{"type":"put","value":"!!"}`, `{"type":"delete","key":"k"}`, `{"type":"error","code":"watch_overflow"}`} {
		if _, err := parseWatchLine([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func FuzzParseWatchLine(f *testing.F) {
	f.Add([]byte(`{"type":"put","key":"a","value":"eA==","mod_revision":4}`))
	f.Add([]byte(`{"type":"progress","revision":9}`))
	f.Add([]byte(`{"type":"error","code":"compacted"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := parseWatchLine(b)
		if err == nil && (ev.Type == EventPut || ev.Type == EventDelete) && ev.ModRevision <= 0 {
			t.Fatalf("accepted an event without a revision: %+v", ev)
		}
	})
}
