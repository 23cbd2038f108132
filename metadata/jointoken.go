package metadata

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Join token ops (61-63, beside the certificate ops): a join token is a
// bearer secret a new worker trades, on the controllers' join protocol,
// for a certificate signed by a controller that holds the CA key. Only
// the SHA-256 of the secret is replicated; the secret itself is shown once,
// to whoever created the token.
const (
	// OpJoinTokenCreate adds a token (JoinTokenCreate).
	OpJoinTokenCreate Op = 61
	// OpJoinTokenRevoke deletes a token (JoinTokenRevoke).
	OpJoinTokenRevoke Op = 62
	// OpJoinTokenUse spends one use of a token for a worker
	// (JoinTokenUse); only when it applies does a controller sign.
	OpJoinTokenUse Op = 63
)

// Join token limits.
const (
	// MaxJoinTokens bounds the tokens kept, live or recently dead: they
	// live in every snapshot.
	MaxJoinTokens = 1000
	// MinJoinTokenTTL and MaxJoinTokenTTL bound a token's lifetime.
	MinJoinTokenTTL = time.Minute
	MaxJoinTokenTTL = 30 * 24 * time.Hour
	// MaxJoinTokenUses bounds how many workers one token may admit.
	MaxJoinTokenUses = 1000
	// JoinTokenKeep is how long an expired or used-up token stays in the
	// state (and 'corral token list'), so that a late user is told that it
	// expired or was used rather than that it never existed. A token to be
	// created finds room by dropping dead tokens at once.
	JoinTokenKeep = 24 * time.Hour
	// JoinTokenRoleWorker is the one role a token can admit for now.
	JoinTokenRoleWorker = "worker"
	// JoinTokenPrefix starts every token string.
	JoinTokenPrefix = "corral-join-"
	// JoinTokenIDBytes and JoinTokenSecretBytes are the sizes of a token's
	// random id and secret.
	JoinTokenIDBytes     = 8
	JoinTokenSecretBytes = 32
)

// Refusals of join token ops, wrapped by Result.Err with details.
var (
	// ErrJoinTokenUnknown: no token has that id (never created, revoked,
	// or dead for longer than JoinTokenKeep).
	ErrJoinTokenUnknown = errors.New("unknown join token")
	// ErrJoinTokenSecret: the secret does not match the token's.
	ErrJoinTokenSecret = errors.New("wrong join token secret")
	// ErrJoinTokenExpired: the token's lifetime is over.
	ErrJoinTokenExpired = errors.New("join token expired")
	// ErrJoinTokenUsedUp: every use of the token was spent.
	ErrJoinTokenUsedUp = errors.New("join token used up")
	// ErrJoinWorkerTaken: the worker id belongs to a worker the cluster
	// knows (not left); a token does not let its holder take it over.
	ErrJoinWorkerTaken = errors.New("worker id belongs to a known worker")
	// ErrJoinWorkerRevoked: the worker id is on the certificate deny-list.
	ErrJoinWorkerRevoked = errors.New("worker id is revoked")
	// ErrTooManyJoinTokens: MaxJoinTokens live tokens exist.
	ErrTooManyJoinTokens = errors.New("too many join tokens")
)

var (
	joinTokenIDPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)
	sha256HexPattern   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidateJoinTokenID reports why id cannot be a join token id, or nil.
func ValidateJoinTokenID(id string) error {
	if !joinTokenIDPattern.MatchString(id) {
		return fmt.Errorf("join token id %q: want %d lower-case hex digits, as 'corral token list' shows", id, 2*JoinTokenIDBytes)
	}
	return nil
}

// ValidateJoinTokenParams reports why a token cannot be made for role with
// this lifetime and number of uses, or nil.
func ValidateJoinTokenParams(role string, ttl time.Duration, uses int) error {
	switch {
	case role != JoinTokenRoleWorker:
		return fmt.Errorf("role %q: join tokens admit workers only (role %q)", role, JoinTokenRoleWorker)
	case ttl < MinJoinTokenTTL || ttl > MaxJoinTokenTTL:
		return fmt.Errorf("ttl %v: want %v to %v", ttl, MinJoinTokenTTL, MaxJoinTokenTTL)
	case uses < 1 || uses > MaxJoinTokenUses:
		return fmt.Errorf("uses %d: want 1 to %d", uses, MaxJoinTokenUses)
	}
	return nil
}

// JoinTokenSecretHash is what the state keeps of a token's secret: the
// SHA-256 of its bytes, in lower-case hex.
func JoinTokenSecretHash(secret []byte) string {
	sum := sha256.Sum256(secret)
	return hex.EncodeToString(sum[:])
}

// FormatJoinToken is the token string a user is given:
// corral-join-<id>.<secret in hex>.
func FormatJoinToken(id string, secret []byte) string {
	return JoinTokenPrefix + id + "." + hex.EncodeToString(secret)
}

// ParseJoinToken splits a token string into its id and secret. The error
// never repeats the secret.
func ParseJoinToken(s string) (id string, secret []byte, err error) {
	bad := fmt.Errorf("join token: want %s<%d hex digits>.<%d hex digits>, as 'corral token create' prints it",
		JoinTokenPrefix, 2*JoinTokenIDBytes, 2*JoinTokenSecretBytes)
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), JoinTokenPrefix)
	if !ok {
		return "", nil, bad
	}
	id, sec, ok := strings.Cut(rest, ".")
	if !ok || ValidateJoinTokenID(id) != nil || len(sec) != 2*JoinTokenSecretBytes {
		return "", nil, bad
	}
	secret, err = hex.DecodeString(sec)
	if err != nil {
		return "", nil, bad
	}
	return id, secret, nil
}

// JoinTokenCreate is the payload of OpJoinTokenCreate. The proposer picks
// the id and the secret (never replicated: only its hash is) and stamps
// AtMS; ExpiresAtMS is AtMS plus the token's lifetime.
type JoinTokenCreate struct {
	ID           string `json:"id"`
	SecretSHA256 string `json:"secret_sha256"`
	Role         string `json:"role"`
	Uses         int    `json:"uses"`
	ExpiresAtMS  int64  `json:"expires_at_ms"`
	AtMS         int64  `json:"at_ms"`
}

// Validate reports why r cannot be applied, or nil.
func (r JoinTokenCreate) Validate() error {
	if err := ValidateJoinTokenID(r.ID); err != nil {
		return err
	}
	if !sha256HexPattern.MatchString(r.SecretSHA256) {
		return errors.New("secret_sha256: want 64 lower-case hex digits")
	}
	if r.AtMS <= 0 {
		return errors.New("at_ms must be set by the proposer")
	}
	return ValidateJoinTokenParams(r.Role, time.Duration(r.ExpiresAtMS-r.AtMS)*time.Millisecond, r.Uses)
}

// JoinTokenRevoke is the payload of OpJoinTokenRevoke.
type JoinTokenRevoke struct {
	ID   string `json:"id"`
	AtMS int64  `json:"at_ms"`
}

// JoinTokenUse is the payload of OpJoinTokenUse: a worker presented the
// token's id and a secret hashing to SecretSHA256, asking for a
// certificate for the public key hashing to KeySHA256 (SHA-256 of its
// SubjectPublicKeyInfo). A retry by the same worker for the same key
// (an answer lost on the way) does not spend another use.
type JoinTokenUse struct {
	ID           string `json:"id"`
	SecretSHA256 string `json:"secret_sha256"`
	Worker       string `json:"worker"`
	KeySHA256    string `json:"key_sha256"`
	AtMS         int64  `json:"at_ms"`
}

// Validate reports why u cannot be applied, or nil.
func (u JoinTokenUse) Validate() error {
	if err := ValidateJoinTokenID(u.ID); err != nil {
		return err
	}
	if !sha256HexPattern.MatchString(u.SecretSHA256) || !sha256HexPattern.MatchString(u.KeySHA256) {
		return errors.New("secret_sha256 and key_sha256: want 64 lower-case hex digits each")
	}
	if u.AtMS <= 0 {
		return errors.New("at_ms must be set by the proposer")
	}
	return ValidateWorkerID(u.Worker)
}

// JoinTokenUsed is the Out of an applied OpJoinTokenUse.
type JoinTokenUsed struct {
	UsesLeft int
	// Retry: the same worker and key used the token last; no use was
	// spent.
	Retry bool
}

// JoinToken is a token as the state keeps it.
type JoinToken struct {
	ID           string `json:"id"`
	SecretSHA256 string `json:"secret_sha256"`
	Role         string `json:"role"`
	Uses         int    `json:"uses"`
	UsesLeft     int    `json:"uses_left"`
	CreatedAtMS  int64  `json:"created_at_ms"`
	ExpiresAtMS  int64  `json:"expires_at_ms"`
	// LastUsedAtMS, LastWorker and LastKeySHA256 describe the last use.
	LastUsedAtMS  int64  `json:"last_used_at_ms,omitempty"`
	LastWorker    string `json:"last_worker,omitempty"`
	LastKeySHA256 string `json:"last_key_sha256,omitempty"`
}

// deadSince is when t stopped admitting workers (expired or used up), or
// 0 if it still would at atMS.
func (t *JoinToken) deadSince(atMS int64) int64 {
	switch {
	case t.UsesLeft == 0:
		return t.LastUsedAtMS
	case t.ExpiresAtMS <= atMS:
		return t.ExpiresAtMS
	}
	return 0
}

// JoinTokenInfo is what may be shown of a token: never its secret or hash.
type JoinTokenInfo struct {
	ID           string `json:"id"`
	Role         string `json:"role"`
	Uses         int    `json:"uses"`
	UsesLeft     int    `json:"uses_left"`
	CreatedAtMS  int64  `json:"created_at_ms"`
	ExpiresAtMS  int64  `json:"expires_at_ms"`
	LastUsedAtMS int64  `json:"last_used_at_ms,omitempty"`
	LastWorker   string `json:"last_worker,omitempty"`
}

func (t *JoinToken) info() JoinTokenInfo {
	return JoinTokenInfo{ID: t.ID, Role: t.Role, Uses: t.Uses, UsesLeft: t.UsesLeft, CreatedAtMS: t.CreatedAtMS,
		ExpiresAtMS: t.ExpiresAtMS, LastUsedAtMS: t.LastUsedAtMS, LastWorker: t.LastWorker}
}

// JoinTokens returns the tokens kept, oldest first.
func (s *State) JoinTokens() []JoinTokenInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]JoinTokenInfo, 0, len(s.ext.JoinTokens))
	for _, t := range s.ext.JoinTokens {
		out = append(out, t.info())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAtMS != out[j].CreatedAtMS {
			return out[i].CreatedAtMS < out[j].CreatedAtMS
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// JoinToken returns one token's public fields.
func (s *State) JoinToken(id string) (JoinTokenInfo, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.ext.JoinTokens[id]
	if t == nil {
		return JoinTokenInfo{}, false
	}
	return t.info(), true
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// pruneJoinTokens drops the tokens dead for JoinTokenKeep at atMS, or,
// with all set, every dead token. It reads no clock: atMS is the command's.
func (s *State) pruneJoinTokens(atMS int64, all bool) {
	for id, t := range s.ext.JoinTokens {
		if d := t.deadSince(atMS); d != 0 && (all || d+JoinTokenKeep.Milliseconds() <= atMS) {
			delete(s.ext.JoinTokens, id)
		}
	}
	if len(s.ext.JoinTokens) == 0 {
		s.ext.JoinTokens = nil
	}
}

func (s *State) applyJoinTokenCreate(c *Command) Result {
	var r JoinTokenCreate
	if err := decodePayload(c, &r); err != nil {
		return s.invalid("%v", err)
	}
	if err := r.Validate(); err != nil {
		return s.invalid("join token: %v", err)
	}
	s.pruneJoinTokens(r.AtMS, false)
	if s.ext.JoinTokens[r.ID] != nil {
		return s.invalid("join token %s already exists", r.ID)
	}
	if len(s.ext.JoinTokens) >= MaxJoinTokens {
		s.pruneJoinTokens(r.AtMS, true)
	}
	if len(s.ext.JoinTokens) >= MaxJoinTokens {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w: %d live tokens exist", ErrTooManyJoinTokens, MaxJoinTokens)}
	}
	if s.ext.JoinTokens == nil {
		s.ext.JoinTokens = map[string]*JoinToken{}
	}
	s.ext.JoinTokens[r.ID] = &JoinToken{ID: r.ID, SecretSHA256: r.SecretSHA256, Role: r.Role, Uses: r.Uses,
		UsesLeft: r.Uses, CreatedAtMS: r.AtMS, ExpiresAtMS: r.ExpiresAtMS}
	return Result{Revision: s.revision}
}

func (s *State) applyJoinTokenRevoke(c *Command) Result {
	var r JoinTokenRevoke
	if err := decodePayload(c, &r); err != nil {
		return s.invalid("%v", err)
	}
	if err := ValidateJoinTokenID(r.ID); err != nil {
		return s.invalid("%v", err)
	}
	if s.ext.JoinTokens[r.ID] == nil {
		return Result{Revision: s.revision, Err: fmt.Errorf("%w %s", ErrJoinTokenUnknown, r.ID)}
	}
	delete(s.ext.JoinTokens, r.ID)
	if len(s.ext.JoinTokens) == 0 {
		s.ext.JoinTokens = nil
	}
	return Result{Revision: s.revision}
}

func (s *State) applyJoinTokenUse(c *Command) Result {
	var u JoinTokenUse
	if err := decodePayload(c, &u); err != nil {
		return s.invalid("%v", err)
	}
	if err := u.Validate(); err != nil {
		return s.invalid("join token use: %v", err)
	}
	s.pruneJoinTokens(u.AtMS, false)
	refuse := func(err error) Result { return Result{Revision: s.revision, Err: err} }
	t := s.ext.JoinTokens[u.ID]
	switch {
	case t == nil:
		return refuse(fmt.Errorf("%w %s: it was revoked, expired or was used up more than %v ago, or never existed",
			ErrJoinTokenUnknown, u.ID, JoinTokenKeep))
	case subtle.ConstantTimeCompare([]byte(t.SecretSHA256), []byte(u.SecretSHA256)) != 1:
		return refuse(fmt.Errorf("%w for token %s", ErrJoinTokenSecret, u.ID))
	case t.ExpiresAtMS <= u.AtMS:
		return refuse(fmt.Errorf("%w at %s", ErrJoinTokenExpired, msTime(t.ExpiresAtMS)))
	case t.Role != JoinTokenRoleWorker:
		return refuse(fmt.Errorf("%w: token %s admits role %q", ErrInvalid, u.ID, t.Role))
	}
	if s.ext.RevokedWorkers[u.Worker] != nil {
		return refuse(fmt.Errorf("%w: %s", ErrJoinWorkerRevoked, u.Worker))
	}
	if w := s.ext.Workers[u.Worker]; w != nil && w.State != WorkerLeft {
		return refuse(fmt.Errorf("%w: %s is %s", ErrJoinWorkerTaken, u.Worker, w.State))
	}
	if t.LastUsedAtMS != 0 && t.LastWorker == u.Worker && t.LastKeySHA256 == u.KeySHA256 {
		return Result{Revision: s.revision, Out: JoinTokenUsed{UsesLeft: t.UsesLeft, Retry: true}}
	}
	if t.UsesLeft == 0 {
		return refuse(fmt.Errorf("%w: all %d use(s) were spent, the last by worker %s at %s",
			ErrJoinTokenUsedUp, t.Uses, t.LastWorker, msTime(t.LastUsedAtMS)))
	}
	t.UsesLeft--
	t.LastUsedAtMS, t.LastWorker, t.LastKeySHA256 = u.AtMS, u.Worker, u.KeySHA256
	return Result{Revision: s.revision, Out: JoinTokenUsed{UsesLeft: t.UsesLeft}}
}

// checkJoinTokens refuses a snapshot whose join tokens are inconsistent.
func (e *extState) checkJoinTokens() error {
	if len(e.JoinTokens) > MaxJoinTokens {
		return corrupt("%d join tokens, more than %d", len(e.JoinTokens), MaxJoinTokens)
	}
	for k, t := range e.JoinTokens {
		if t == nil || t.ID != k || ValidateJoinTokenID(k) != nil || !sha256HexPattern.MatchString(t.SecretSHA256) ||
			t.Role != JoinTokenRoleWorker || t.Uses < 1 || t.Uses > MaxJoinTokenUses || t.UsesLeft < 0 ||
			t.UsesLeft > t.Uses || t.ExpiresAtMS <= t.CreatedAtMS {
			return corrupt("join token %q is inconsistent", k)
		}
	}
	return nil
}
