package raftlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Snapshot data files. The state-machine blob of a snapshot (30-300 MB) is
// kept out of Pebble: Pebble's WAL is a single queue, so a blob committed
// through it delays the raft loop's small synced batches behind it no matter
// which lock is held. Instead the blob goes to its own file in
// <Options.Dir>/snap/, written and fsynced without the writers' lock, and
// Pebble only commits a small record naming it (see snapRef). This is what
// etcd's snapshotter and hashicorp/raft's FileSnapshotStore do.
//
// File layout (all integers big-endian):
//
//	bytes 0..7    magic "RLSNAP" + version 1 + 0
//	bytes 8..15   snapshot index
//	bytes 16..23  snapshot term
//	bytes 24..31  data length n
//	bytes 32..    data (n bytes)
//	last 4 bytes  CRC32C (Castagnoli) of bytes 0..32+n
//
// The length lets a truncated file be told apart from a complete one, the
// CRC covers header and data, and index/term tie the file to its metadata.
const (
	snapDirName      = "snap"
	snapFileExt      = ".snap"
	snapTmpExt       = ".tmp"
	snapHeaderLen    = 32
	snapTrailerLen   = 4
	snapFileOverhead = snapHeaderLen + snapTrailerLen
)

var snapMagic = [8]byte{'R', 'L', 'S', 'N', 'A', 'P', 1, 0}

// keySnapFile holds the snapRef of the current snapshot's data file.
var keySnapFile = []byte("r/snapfile")

// snapRef is what Pebble stores about a snapshot data file: enough to find
// it and to check that the file found is the one that was committed.
type snapRef struct {
	index, term uint64
	length      uint64 // data length, without header and trailer
	crc         uint32 // the file's trailer CRC (header and data)
	name        string // base name inside the snap directory
}

// snapFileName names the data file of snapshot (index, term). Fixed-width
// hex makes lexical order equal (term, index) order in directory listings.
func snapFileName(index, term uint64) string {
	return fmt.Sprintf("%016x-%016x%s", term, index, snapFileExt)
}

// encodeSnapRef frames ref as a record under keySnapFile.
func encodeSnapRef(ref *snapRef) []byte {
	p := make([]byte, 28, 28+len(ref.name))
	binary.BigEndian.PutUint64(p[0:8], ref.index)
	binary.BigEndian.PutUint64(p[8:16], ref.term)
	binary.BigEndian.PutUint64(p[16:24], ref.length)
	binary.BigEndian.PutUint32(p[24:28], ref.crc)
	p = append(p, ref.name...)
	return encodeRecord(keySnapFile, p)
}

// decodeSnapRefPayload decodes a verified keySnapFile payload. The name is
// read from disk and later joined to a directory, so anything that is not a
// plain snapshot file name is rejected rather than trusted.
func decodeSnapRefPayload(p []byte) (*snapRef, error) {
	if len(p) < 28 {
		return nil, fmt.Errorf("%w: %s: payload is %d bytes, want at least 28", ErrCorrupt, describeKey(keySnapFile), len(p))
	}
	ref := &snapRef{
		index:  binary.BigEndian.Uint64(p[0:8]),
		term:   binary.BigEndian.Uint64(p[8:16]),
		length: binary.BigEndian.Uint64(p[16:24]),
		crc:    binary.BigEndian.Uint32(p[24:28]),
		name:   string(p[28:]),
	}
	if ref.name != snapFileName(ref.index, ref.term) {
		return nil, fmt.Errorf("%w: %s: file name %q does not match snapshot %d term %d",
			ErrCorrupt, describeKey(keySnapFile), ref.name, ref.index, ref.term)
	}
	return ref, nil
}

// encodeSnapFile returns the header and trailer framing data for snapshot
// (index, term); the data itself is written between them without copying.
func encodeSnapFile(index, term uint64, data []byte) (header, trailer []byte, crc uint32) {
	header = snapFileHeader(index, term, uint64(len(data)))
	crc = crc32.Update(crc32.Update(0, castagnoli, header), castagnoli, data)
	trailer = binary.BigEndian.AppendUint32(nil, crc)
	return header, trailer, crc
}

// snapFileHeader is the header of the file of snapshot (index, term) with
// length data bytes.
func snapFileHeader(index, term, length uint64) []byte {
	header := make([]byte, snapHeaderLen)
	copy(header, snapMagic[:])
	binary.BigEndian.PutUint64(header[8:16], index)
	binary.BigEndian.PutUint64(header[16:24], term)
	binary.BigEndian.PutUint64(header[24:32], length)
	return header
}

// decodeSnapFile verifies a whole snapshot file's framing and CRC and returns
// its header fields and data (aliasing buf). It never panics on arbitrary
// input (see FuzzDecodeSnapFile); every error wraps ErrCorrupt.
func decodeSnapFile(buf []byte) (ref snapRef, data []byte, err error) {
	if len(buf) < snapFileOverhead {
		return snapRef{}, nil, fmt.Errorf("%w: file is %d bytes, shorter than its header and trailer", ErrCorrupt, len(buf))
	}
	if [8]byte(buf[:8]) != snapMagic {
		return snapRef{}, nil, fmt.Errorf("%w: bad magic %x (not a snapshot file or unknown version)", ErrCorrupt, buf[:8])
	}
	ref.index = binary.BigEndian.Uint64(buf[8:16])
	ref.term = binary.BigEndian.Uint64(buf[16:24])
	ref.length = binary.BigEndian.Uint64(buf[24:32])
	if have := uint64(len(buf) - snapFileOverhead); ref.length != have {
		return snapRef{}, nil, fmt.Errorf("%w: header says %d data bytes, file holds %d (truncated or extended)",
			ErrCorrupt, ref.length, have)
	}
	body := buf[:len(buf)-snapTrailerLen]
	ref.crc = binary.BigEndian.Uint32(buf[len(body):])
	if got := crc32.Checksum(body, castagnoli); got != ref.crc {
		return snapRef{}, nil, fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrCorrupt, ref.crc, got)
	}
	ref.name = snapFileName(ref.index, ref.term)
	return ref, body[snapHeaderLen:], nil
}

// snapDir is the directory of snapshot data files.
func (s *Store) snapDir() string { return filepath.Join(s.opts.Dir, snapDirName) }

// writeSnapFile writes data as the file of snapshot (index, term): to a
// temporary name, fsynced, renamed into place, directory fsynced (fsyncs are
// skipped under NoSync). A crash leaves either no file, a .tmp, or the whole
// file; Open removes the first two kinds of leftovers and any file that the
// committed metadata does not name. The caller holds snapMu.
func (s *Store) writeSnapFile(index, term uint64, data []byte) (*snapRef, error) {
	return s.writeSnapFileFrom(index, term, int64(len(data)), func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeSnapFileFrom is writeSnapFile with the data written by write, which
// must write exactly size bytes, straight into the file through a small
// buffer: a large state's snapshot is never held whole in memory.
func (s *Store) writeSnapFileFrom(index, term uint64, size int64, write func(io.Writer) error) (*snapRef, error) {
	if size < 0 {
		return nil, fmt.Errorf("write snapshot file: negative size %d", size)
	}
	ref := &snapRef{index: index, term: term, length: uint64(size), name: snapFileName(index, term)}
	final := filepath.Join(s.snapDir(), ref.name)
	tmp := final + snapTmpExt
	crc, err := s.writeFileSynced(tmp, snapFileHeader(index, term, uint64(size)), size, write)
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("write snapshot file %s: %w", tmp, err)
	}
	ref.crc = crc
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("write snapshot file: %w", err)
	}
	if err := s.syncDir(s.snapDir()); err != nil {
		_ = os.Remove(final)
		return nil, fmt.Errorf("write snapshot file %s: %w", final, err)
	}
	return ref, nil
}

// snapWriter counts and checksums what passes through it to w.
type snapWriter struct {
	w   io.Writer
	n   int64
	crc uint32
}

func (sw *snapWriter) Write(p []byte) (int, error) {
	n, err := sw.w.Write(p)
	sw.n += int64(n)
	sw.crc = crc32.Update(sw.crc, castagnoli, p[:n])
	return n, err
}

// writeFileSynced writes header, the size bytes write produces and the
// CRC trailer to path, fsynced, and returns the CRC.
func (s *Store) writeFileSynced(path string, header []byte, size int64, write func(io.Writer) error) (uint32, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	fail := func(err error) (uint32, error) {
		_ = f.Close()
		return 0, err
	}
	var out io.Writer = f
	if !s.opts.NoSync {
		out = &pacedFile{f: f}
	}
	bw := bufio.NewWriterSize(out, snapWriteBuffer)
	sw := &snapWriter{w: bw}
	if _, err := sw.Write(header); err != nil {
		return fail(err)
	}
	if err := write(sw); err != nil {
		return fail(err)
	}
	if got := sw.n - int64(len(header)); got != size {
		return fail(fmt.Errorf("snapshot data is %d bytes, its header says %d", got, size))
	}
	if _, err := bw.Write(binary.BigEndian.AppendUint32(nil, sw.crc)); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if !s.opts.NoSync {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	return sw.crc, f.Close()
}

// pacedFile writes a snapshot file and starts the kernel's writeback of
// what it wrote every writebackEvery bytes, waiting for the previous
// ranges' writeback first, as Pebble's BytesPerSync and RocksDB's
// bytes_per_sync do. Without it a snapshot of 140 MB sat in the page
// cache until its one fsync pushed all of it to the disk at once, and the
// raft log's small synced writes, of this controller and of the others
// sharing the disk, queued behind it: 13-18 log syncs over 25 ms in 8 s
// of 128 ZooKeeper clients writing, against 0-3 with the pacing
// (docs/PERFORMANCE.md, "Snapshots off the request path"). The pace also
// keeps the writer from running ahead of the disk.
type pacedFile struct {
	f       *os.File
	written int64 // bytes written
	started int64 // bytes whose writeback has been started
}

// writebackEvery is how many bytes a snapshot writes between the starts
// of their writeback: a few milliseconds of the disk's time per range.
const writebackEvery = 4 << 20

func (p *pacedFile) Write(b []byte) (int, error) {
	n, err := p.f.Write(b)
	p.written += int64(n)
	if err != nil {
		return n, err
	}
	if p.written-p.started >= writebackEvery {
		// From 0: the wait covers the earlier ranges still being written.
		if err := startWriteback(p.f, 0, p.written); err != nil {
			return n, fmt.Errorf("start writeback of the snapshot file: %w", err)
		}
		p.started = p.written
	}
	return n, nil
}

// snapWriteBuffer is the write size of a snapshot file: large enough that
// the syscalls do not show, small beside any state worth streaming.
const snapWriteBuffer = 1 << 20

// syncDir fsyncs a directory so that a rename or creation in it is durable.
func (s *Store) syncDir(dir string) error {
	if s.opts.NoSync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return d.Close()
}

// readSnapFile reads and verifies the file ref names. A missing, truncated or
// damaged file, or one that is not the committed one, is ErrCorrupt: the
// metadata that names it is already durable.
func (s *Store) readSnapFile(ref *snapRef) ([]byte, error) {
	data, _, err := s.loadSnapFile(ref, false)
	return data, err
}

// mapSnapFile is readSnapFile with the file mapped read-only rather than
// read into the heap (mapFile says why); unmap releases it. Open uses it for
// the snapshot a controller starts from.
func (s *Store) mapSnapFile(ref *snapRef) (data []byte, unmap func(), err error) {
	return s.loadSnapFile(ref, true)
}

func (s *Store) loadSnapFile(ref *snapRef, mapped bool) (data []byte, unmap func(), err error) {
	s.snapFileReads.Add(1)
	path := filepath.Join(s.snapDir(), ref.name)
	var buf []byte
	unmap = func() {}
	if mapped {
		buf, unmap, err = mapFile(path)
	} else {
		buf, err = os.ReadFile(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: snapshot %d data file %s is missing", ErrCorrupt, ref.index, path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read snapshot file: %w", err)
	}
	got, data, err := decodeSnapFile(buf)
	if err != nil {
		unmap()
		return nil, nil, fmt.Errorf("snapshot %d data file %s: %w", ref.index, path, err)
	}
	if got.index != ref.index || got.term != ref.term || got.length != ref.length || got.crc != ref.crc {
		unmap()
		return nil, nil, fmt.Errorf("%w: snapshot data file %s holds snapshot %d term %d (%d bytes, crc %08x), "+
			"metadata wants %d term %d (%d bytes, crc %08x)", ErrCorrupt, path,
			got.index, got.term, got.length, got.crc, ref.index, ref.term, ref.length, ref.crc)
	}
	return data, unmap, nil
}

// removeSnapFiles deletes every snapshot file and leftover .tmp in the snap
// directory except keep (a base name; "" keeps nothing). It runs at Open
// (nothing else runs) or with snapMu held (no writer has a .tmp open), and
// holds filesMu exclusively so that no Snapshot() reader loses the file it
// is reading. Failures are logged, not returned: the snapshot that made the
// files stale is already committed and the next Open retries.
func (s *Store) removeSnapFiles(keep string) {
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	des, err := os.ReadDir(s.snapDir())
	if err != nil {
		s.log.Warn("cannot list snapshot files", "err", err)
		return
	}
	for _, de := range des {
		name := de.Name()
		if name == keep || !(strings.HasSuffix(name, snapFileExt) || strings.HasSuffix(name, snapTmpExt)) {
			continue
		}
		if err := os.Remove(filepath.Join(s.snapDir(), name)); err != nil {
			s.log.Warn("cannot remove stale snapshot file", "file", name, "err", err)
			continue
		}
		s.log.Debug("removed stale snapshot file", "file", name)
	}
}
