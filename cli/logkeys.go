package cli

import (
	"context"
	"log/slog"
	"slices"
)

// uniqueKeys is a slog.Handler that keeps one attribute per key. A
// subsystem's logger adds its own "component" to the controller's
// ("component=controller ... component=raft"), and the transport its
// "node" to the one the controller set: a JSON line then held a key twice,
// which log pipelines reject or read either way. The later value wins: it
// is the more specific one. Attributes given to With are kept here rather
// than formatted ahead by the inner handler, so that a later one can
// replace them; logs are one line per event, not a hot path.
type uniqueKeys struct {
	inner slog.Handler // has none of attrs
	attrs []slog.Attr  // from WithAttrs, one per key
}

// Enabled defers to the inner handler.
func (h uniqueKeys) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// WithAttrs returns a handler whose attributes are h's with as set over them.
func (h uniqueKeys) WithAttrs(as []slog.Attr) slog.Handler {
	merged := slices.Clone(h.attrs)
	for _, a := range as {
		merged = setAttr(merged, a)
	}
	return uniqueKeys{inner: h.inner, attrs: merged}
}

// WithGroup hands the attributes so far to the inner handler: those inside
// a group cannot collide with them.
func (h uniqueKeys) WithGroup(name string) slog.Handler {
	return uniqueKeys{inner: h.inner.WithAttrs(h.attrs).WithGroup(name)}
}

// Handle writes r with h's attributes first, each key once.
func (h uniqueKeys) Handle(ctx context.Context, r slog.Record) error {
	if len(h.attrs) == 0 {
		return h.inner.Handle(ctx, r)
	}
	attrs := slices.Clone(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		attrs = setAttr(attrs, a)
		return true
	})
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(attrs...)
	return h.inner.Handle(ctx, out)
}

// setAttr replaces the attribute of a's key in as, or appends a.
func setAttr(as []slog.Attr, a slog.Attr) []slog.Attr {
	for i := range as {
		if as[i].Key == a.Key {
			as[i] = a
			return as
		}
	}
	return append(as, a)
}
