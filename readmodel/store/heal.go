package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
	gojson "github.com/goccy/go-json"

	"github.com/marketd/marketd/readmodel"
)

// The view store is a projection of the streams, so damage to its files is
// never fatal to a node: the store says that it is damaged (a *DamageError,
// see Damaged), and the node rebuilds its views from the streams beside the
// damaged directory and swaps the build in (node.Views, through
// the path `marketd replay` takes).
//
// Damage is recognised at Open (Badger refuses the directory: a table file
// missing, a MANIFEST without its magic; or a table whose index does not
// parse, which Badger would hit in a goroutine of its own and crash the
// process with) and on read (a value or block whose checksum does not
// match: the store runs Badger with value and block checksums verified on
// read; bytes that do not decode; a panic inside Badger recovered by the
// caller with Recovered).

// Reasons a store is found damaged, the values of
// marketd_views_rebuilds_total's reason label.
const (
	DamageOpen   = "open"   // Badger refused to open the directory
	DamageRead   = "read"   // Badger failed a read: checksum mismatch, a bad value pointer
	DamageDecode = "decode" // stored bytes did not decode
	DamagePanic  = "panic"  // Badger panicked on the store's files
	// DamageChecksum: a table failed Verify. Badger's iterators end
	// silently at a block that fails its checksum, so a garbled table
	// reads as a store with keys missing (an empty or partial index),
	// not as an error: only a verification pass finds it.
	DamageChecksum = "checksum"
)

// ErrDamaged is the cause (errors.Is) of every *DamageError.
var ErrDamaged = errors.New("view store damaged")

// DamageError says the view store's files are damaged and why. It is an
// Internal *readmodel.Error's cause, so the API answers it as any failure
// of the node.
type DamageError struct {
	Reason string // DamageOpen, DamageRead, DamageDecode or DamagePanic
	Err    error
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("view store damaged (%s): %v", e.Reason, e.Err)
}

func (e *DamageError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDamaged) true.
func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

func damaged(reason string, err error, what string) error {
	return readmodel.Wrap(readmodel.Internal, &DamageError{Reason: reason, Err: err}, what)
}

// Damaged reports whether err (from any method of a Store, or of the
// projector over it) says the store's files are damaged, and the reason.
// Besides a *DamageError it recognises what the store's reads return for
// damaged bytes without wrapping them: Badger's checksum and value-pointer
// errors, JSON that does not decode, and the store's "corrupt ..." errors.
// Context errors and a closed store are never damage.
func Damaged(err error) (reason string, ok bool) {
	if err == nil {
		return "", false
	}
	var de *DamageError
	if errors.As(err, &de) {
		return de.Reason, true
	}
	if errors.Is(err, y.ErrChecksumMismatch) {
		return DamageRead, true
	}
	msg := err.Error()
	for _, s := range []string{"Invalid value pointer offset", "Invalid read: vp", "file with ID:"} {
		if strings.Contains(msg, s) {
			return DamageRead, true
		}
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var gse *gojson.SyntaxError
	var gte *gojson.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) || errors.As(err, &gse) || errors.As(err, &gte) {
		return DamageDecode, true
	}
	// Every *readmodel.Error in the chain, not only the first: the store's
	// own "corrupt ..." sits below its caller's wrap ("apply").
	for e := err; e != nil; {
		var re *readmodel.Error
		if !errors.As(e, &re) {
			break
		}
		if re.Code == readmodel.Internal && (strings.HasPrefix(re.Message, "corrupt ") || strings.HasPrefix(re.Message, "decode ")) {
			return DamageDecode, true
		}
		e = re.Err
	}
	return "", false
}

// corruptRecord is the sentinel of a stored record format whose bytes do
// not decode (errors.Is compares it; every wrap of it is damage, since it
// is a *DamageError).
func corruptRecord(what string) error {
	return &DamageError{Reason: DamageDecode, Err: errors.New("store: corrupt " + what)}
}

// Recovered turns a panic recovered at the store's boundary (r, from
// recover()) into a damage error: Badger panics on some damaged files
// (a truncated table) instead of returning an error. Nil for a nil r.
func Recovered(r any, what string) error {
	if r == nil {
		return nil
	}
	return damaged(DamagePanic, fmt.Errorf("panic: %v", r), what)
}

// checkTables opens every table file in dir the way Badger's Open does,
// in this goroutine and with the panic recovered: Badger opens tables in
// goroutines of its own, where a truncated table's index panics and takes
// the process down before Open can return. It reads each table's index
// and footer, not its blocks (a block's checksum is verified when it is
// read). A missing dir has no tables.
//
// Only the tables the MANIFEST names are checked: a table file it does not
// name is what a flush or compaction cut short by a crash left behind
// (written, or only created and still zeros, before the MANIFEST recorded
// it), and Badger's Open deletes it. When the MANIFEST cannot be read,
// every table is checked (the MANIFEST's damage is Open's to report).
func checkTables(dir string) (err error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		return nil
	}
	live := manifestTables(dir)
	for _, name := range names {
		if live != nil && !live[filepath.Base(name)] {
			continue
		}
		if err := checkTable(name); err != nil {
			return err
		}
	}
	return nil
}

// manifestTables returns the file names of the tables dir's MANIFEST
// records, or nil when it cannot be read.
func manifestTables(dir string) (names map[string]bool) {
	defer func() {
		if recover() != nil {
			names = nil
		}
	}()
	fp, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return nil
	}
	defer fp.Close()
	m, _, err := badger.ReplayManifestFile(fp, 0, badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		return nil
	}
	names = make(map[string]bool, len(m.Tables))
	for id := range m.Tables {
		names[table.IDToFilename(id)] = true
	}
	return names
}

func checkTable(name string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Recovered(r, "open table "+filepath.Base(name))
		}
	}()
	mf, err := z.OpenMmapFile(name, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return damaged(DamageOpen, err, "open table "+filepath.Base(name))
	}
	t, err := table.OpenTable(mf, table.Options{ChkMode: options.NoVerification, Compression: options.None})
	if err != nil {
		return damaged(DamageOpen, err, "open table "+filepath.Base(name))
	}
	_ = t.MmapFile.Close(-1) // not DecrRef: that deletes the file
	return nil
}

// openBadger is badger.Open with its failures sorted: a directory another
// store holds is an ordinary Internal error (two nodes on one data dir is
// an operator's mistake a rebuild must not paper over); any other refusal,
// or a panic, is damage.
func openBadger(bo badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, Recovered(r, "open badger in "+bo.Dir)
		}
	}()
	db, err = badger.Open(bo)
	if err == nil {
		return db, nil
	}
	if strings.Contains(err.Error(), "Cannot acquire directory lock") || errors.Is(err, os.ErrPermission) {
		return nil, readmodel.Wrap(readmodel.Internal, err, "open badger in "+bo.Dir)
	}
	return nil, damaged(DamageOpen, err, "open badger in "+bo.Dir)
}

// Verify checks the checksum of every block of every table (Badger's
// DB.VerifyChecksum), which reads the whole LSM tree (not the value log:
// values are verified when read). A failure, or a panic, is damage
// (DamageChecksum). Safe for concurrent use with reads and Update.
func (s *Store) Verify() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = damaged(DamageChecksum, fmt.Errorf("panic: %v", r), "verify tables")
		}
	}()
	if err := s.db.VerifyChecksum(); err != nil {
		return damaged(DamageChecksum, err, "verify tables")
	}
	return nil
}

// collectGuarded is a round of the background value-log GC with a panic
// (Badger rewriting a damaged file) recovered and reported as damage.
func (s *Store) collectGuarded() {
	defer func() {
		if r := recover(); r != nil {
			s.noteDamage(Recovered(r, "value-log GC"))
		}
	}()
	s.collect(s.gcStop, s.opts.GCShare)
}

// noteDamage hands err to Options.OnDamage when it is damage.
func (s *Store) noteDamage(err error) {
	if s.opts.OnDamage == nil {
		return
	}
	if _, ok := Damaged(err); ok {
		s.opts.OnDamage(err)
	}
}
