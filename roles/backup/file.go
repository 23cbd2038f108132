// Package backup owns corral's backup file format and the offline
// operations on a controller's data dir: writing a restored cluster's data
// dirs from a backup, and recovering a one-member cluster from a survivor's
// log when the quorum is lost for good. Nothing here runs inside a live
// controller; it only writes data dirs a controller then starts from.
package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/corral-dev/corral/metadata"
)

// Backup file layout (all integers big-endian):
//
//	"CORRALBK" | version (1 byte, 1) | header length (u32) | header JSON |
//	data length (u64) | data (a metadata snapshot) | SHA-256 of everything before
const (
	backupMagic   = "CORRALBK"
	backupVersion = 1
	maxHeaderLen  = 1 << 20
	// MaxBackupBytes bounds what a restore will read.
	MaxBackupBytes = 8 << 30
)

// ErrBadBackup wraps every reason a backup file is refused.
var ErrBadBackup = errors.New("bad backup file")

// Header describes a backup: where in the log it was taken.
type Header struct {
	Index     uint64            `json:"index"`
	Term      uint64            `json:"term"`
	ClusterID string            `json:"cluster_id"`
	CreatedAt time.Time         `json:"created_at"`
	Members   []metadata.Member `json:"members"`
	DataSize  uint64            `json:"data_size"`
}

// Backup is a decoded, verified backup file.
type Backup struct {
	Header Header
	Data   []byte
}

// Encode writes a backup of data with header h to w.
func Encode(w io.Writer, h Header, data []byte) error {
	h.DataSize = uint64(len(data))
	hdr, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode backup header: %w", err)
	}
	sum := sha256.New()
	out := io.MultiWriter(w, sum)
	var buf []byte
	buf = append(buf, backupMagic...)
	buf = append(buf, backupVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(hdr)))
	buf = append(buf, hdr...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(data)))
	if _, err := out.Write(buf); err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	if _, err := out.Write(data); err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	if _, err := w.Write(sum.Sum(nil)); err != nil {
		return fmt.Errorf("write backup checksum: %w", err)
	}
	return nil
}

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadBackup}, a...)...)
}

// Decode reads and verifies a backup: magic, version, lengths, the
// checksum and that the data is a readable metadata snapshot at the index
// the header names. It never panics on damaged input.
func Decode(r io.Reader) (*Backup, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxBackupBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read backup: %w", err)
	}
	if len(raw) > MaxBackupBytes {
		return nil, bad("larger than %d bytes", MaxBackupBytes)
	}
	fixed := len(backupMagic) + 1 + 4
	if len(raw) < fixed+8+sha256.Size {
		return nil, bad("only %d bytes: truncated or not a corral backup", len(raw))
	}
	if !bytes.Equal(raw[:len(backupMagic)], []byte(backupMagic)) {
		return nil, bad("does not start with %q: not a corral backup", backupMagic)
	}
	if v := raw[len(backupMagic)]; v != backupVersion {
		return nil, bad("format version %d; this corral reads version %d", v, backupVersion)
	}
	body, stored := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], stored) {
		return nil, bad("checksum mismatch: the file is damaged or truncated")
	}
	hlen := uint64(binary.BigEndian.Uint32(body[len(backupMagic)+1:]))
	if hlen > maxHeaderLen || uint64(fixed)+hlen+8 > uint64(len(body)) {
		return nil, bad("header length %d does not fit the file", hlen)
	}
	var b Backup
	if err := json.Unmarshal(body[fixed:fixed+int(hlen)], &b.Header); err != nil {
		return nil, bad("header: %v", err)
	}
	rest := body[fixed+int(hlen):]
	dlen := binary.BigEndian.Uint64(rest)
	if dlen != uint64(len(rest)-8) || dlen != b.Header.DataSize {
		return nil, bad("data length %d does not match the file (%d bytes of data, header says %d)", dlen, len(rest)-8, b.Header.DataSize)
	}
	b.Data = rest[8:]
	st, err := metadata.Restore(b.Data)
	if err != nil {
		return nil, bad("state: %v", err)
	}
	if st.AppliedIndex() != b.Header.Index || b.Header.Index == 0 || b.Header.Term == 0 {
		return nil, bad("header says index %d term %d but the state is at index %d", b.Header.Index, b.Header.Term, st.AppliedIndex())
	}
	return &b, nil
}
