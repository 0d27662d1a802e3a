// Command interop runs one case of the interop lane against a state store (the emulator): the
// official Go SDK's state store, lease and lock clients, used as an application would use them.
//
//	interop -case NAME -url mqtt://127.0.0.1:PORT [-direct mqtt://…] [-prefix P] [-n N] …
//
// It prints "PASS <case>" and exits 0 when every expectation held, or prints the first one that did
// not and exits 1. A case that needs the test to act midway prints a line "STEP <what>" and reads
// one line from stdin before it goes on (the test drops the connections, or writes with its own
// client). -url is the connection under test (a relay the test can cut); -direct, when given, is the
// one the case's second client uses, so that a cut leaves it connected.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/Azure/iot-operations-sdks/go/mqtt"
	"github.com/Azure/iot-operations-sdks/go/protocol"
	"github.com/Azure/iot-operations-sdks/go/services/leasedlock"
	"github.com/Azure/iot-operations-sdks/go/services/statestore"
	sserrors "github.com/Azure/iot-operations-sdks/go/services/statestore/errors"
)

type env struct {
	url, direct, prefix string
	n                   int
	lockName, counter   string
	holdMs              int
	stdin               *bufio.Reader
}

type store = statestore.Client[string, string]

var cases = map[string]func(context.Context, *env) error{
	"set-get":          caseSetGet,
	"set-conditions":   caseSetConditions,
	"set-expiry":       caseSetExpiry,
	"set-persist":      caseSetPersist,
	"del-vdel":         caseDelVDel,
	"fencing":          caseFencing,
	"notify":           caseNotify,
	"notify-reconnect": caseNotifyReconnect,
	"lease":            caseLease,
	"lease-renew":      caseLeaseRenew,
	"lease-observe":    caseLeaseObserve,
	"lock-edit":        caseLockEdit,
	"counter":          caseCounter,
	"fence-go-first":   caseFenceGoFirst,
	"fence-ours-first": caseFenceOursFirst,
	"bench":            caseBench,
}

func main() {
	e := &env{stdin: bufio.NewReader(os.Stdin)}
	name := flag.String("case", "", "the case to run")
	list := flag.Bool("list", false, "print the case names")
	flag.StringVar(&e.url, "url", "", "broker URL under test")
	flag.StringVar(&e.direct, "direct", "", "broker URL for the second client (default: -url)")
	flag.StringVar(&e.prefix, "prefix", fmt.Sprintf("go-%d", os.Getpid()), "prefix for keys and client ids")
	flag.IntVar(&e.n, "n", 20, "how many turns (lock-edit, counter, bench)")
	flag.StringVar(&e.lockName, "lock", "", "lock name (counter, fence-*, bench)")
	flag.StringVar(&e.counter, "key", "", "protected key (counter, fence-*, bench)")
	flag.IntVar(&e.holdMs, "lease-ms", 5000, "lease duration in ms (counter, bench)")
	timeout := flag.Duration("timeout", 120*time.Second, "the whole case's deadline")
	flag.Parse()
	if *list {
		names := make([]string, 0, len(cases))
		for n := range cases {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Println(n)
		}
		return
	}
	run, ok := cases[*name]
	if !ok || e.url == "" {
		fmt.Fprintf(os.Stderr, "usage: interop -case NAME -url URL (unknown case %q)\n", *name)
		os.Exit(2)
	}
	if e.direct == "" {
		e.direct = e.url
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, e); err != nil {
		fmt.Printf("FAIL %s: %v\n", *name, err)
		os.Exit(1)
	}
	fmt.Printf("PASS %s\n", *name)
}

// connect starts a session client with this id on the URL and a state store client over it, and
// waits for the first CONNACK.
func connect(ctx context.Context, id, raw string) (*store, func(), error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, err
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		return nil, nil, fmt.Errorf("port of %q: %w", raw, err)
	}
	session, err := mqtt.NewSessionClient(id, mqtt.TCPConnection(u.Hostname(), uint16(port)), mqtt.WithKeepAlive(10))
	if err != nil {
		return nil, nil, err
	}
	connected := make(chan struct{}, 1)
	done := session.RegisterConnectEventHandler(func(*mqtt.ConnectEvent) {
		select {
		case connected <- struct{}{}:
		default:
		}
	})
	defer done()
	if err := session.Start(); err != nil {
		return nil, nil, err
	}
	select {
	case <-connected:
	case <-ctx.Done():
		_ = session.Stop()
		return nil, nil, fmt.Errorf("%s: no CONNACK: %w", id, ctx.Err())
	}
	app, err := protocol.NewApplication()
	if err != nil {
		return nil, nil, err
	}
	client, err := statestore.New[string, string](app, session)
	if err != nil {
		_ = session.Stop()
		return nil, nil, err
	}
	if err := client.Start(ctx); err != nil {
		_ = session.Stop()
		return nil, nil, err
	}
	return client, func() {
		client.Close()
		_ = session.Stop()
	}, nil
}

// step tells the test what the case has reached and waits for its go-ahead.
func (e *env) step(what string) error {
	fmt.Printf("STEP %s\n", what)
	if _, err := e.stdin.ReadString('\n'); err != nil {
		return fmt.Errorf("no go-ahead after %q: %w", what, err)
	}
	return nil
}

func expect(cond bool, format string, args ...any) error {
	if cond {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// isService tells whether err is the state store's refusal `want`.
func isService(err error, want sserrors.Service) bool {
	var svc sserrors.Service
	return errors.As(err, &svc) && svc == want
}

func caseSetGet(ctx context.Context, e *env) error {
	c, stop, err := connect(ctx, e.prefix+"-a", e.url)
	if err != nil {
		return err
	}
	defer stop()
	key := e.prefix + ":set-get"
	missing, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := expect(missing.Value == "" && missing.Version.IsZero(), "GET of a missing key: %q version %v", missing.Value, missing.Version); err != nil {
		return err
	}
	first, err := c.Set(ctx, key, "one", statestore.WithTimeout(5*time.Second))
	if err != nil {
		return err
	}
	if err := expect(first.Value && !first.Version.IsZero(), "SET: applied %v version %v", first.Value, first.Version); err != nil {
		return err
	}
	got, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := expect(got.Value == "one" && got.Version.Compare(first.Version) == 0, "GET after SET: %q version %v, want one at %v", got.Value, got.Version, first.Version); err != nil {
		return err
	}
	second, err := c.Set(ctx, key, "two")
	if err != nil {
		return err
	}
	if err := expect(second.Version.Compare(first.Version) > 0, "second SET's version %v not after %v", second.Version, first.Version); err != nil {
		return err
	}
	binary := "\x00\r\n\xff" + string(make([]byte, 300))
	if _, err := c.Set(ctx, key, binary); err != nil {
		return err
	}
	got, err = c.Get(ctx, key)
	if err != nil {
		return err
	}
	return expect(got.Value == binary, "binary value came back as %q", got.Value)
}

func caseSetConditions(ctx context.Context, e *env) error {
	c, stop, err := connect(ctx, e.prefix+"-a", e.url)
	if err != nil {
		return err
	}
	defer stop()
	key := e.prefix + ":cond"
	res, err := c.Set(ctx, key, "v1", statestore.WithCondition(statestore.NotExists))
	if err != nil {
		return err
	}
	if err := expect(res.Value, "NX on a missing key not applied"); err != nil {
		return err
	}
	res, err = c.Set(ctx, key, "v2", statestore.WithCondition(statestore.NotExists))
	if err != nil {
		return err
	}
	if err := expect(!res.Value, "NX on an existing key applied"); err != nil {
		return err
	}
	res, err = c.Set(ctx, key, "v1", statestore.WithCondition(statestore.NotExistsOrEqual))
	if err != nil {
		return err
	}
	if err := expect(res.Value, "NEX with the equal value not applied"); err != nil {
		return err
	}
	res, err = c.Set(ctx, key, "v3", statestore.WithCondition(statestore.NotExistsOrEqual))
	if err != nil {
		return err
	}
	if err := expect(!res.Value, "NEX with another value applied"); err != nil {
		return err
	}
	res, err = c.Set(ctx, key+":nex-missing", "v", statestore.WithCondition(statestore.NotExistsOrEqual))
	if err != nil {
		return err
	}
	if err := expect(res.Value, "NEX on a missing key not applied"); err != nil {
		return err
	}
	got, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	return expect(got.Value == "v1", "value after the conditions: %q, want v1", got.Value)
}

func caseSetExpiry(ctx context.Context, e *env) error {
	c, stop, err := connect(ctx, e.prefix+"-a", e.url)
	if err != nil {
		return err
	}
	defer stop()
	key := e.prefix + ":px"
	if _, err := c.Set(ctx, key, "soon", statestore.WithExpiry(300*time.Millisecond)); err != nil {
		return err
	}
	if _, err := c.Set(ctx, key+":kept", "kept", statestore.WithExpiry(time.Hour)); err != nil {
		return err
	}
	// The key goes within the case's deadline; no bound of our own on how soon.
	for {
		got, err := c.Get(ctx, key)
		if err != nil {
			return err
		}
		if got.Version.IsZero() {
			break
		}
		if err := expect(got.Value == "soon", "value before expiry: %q", got.Value); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the key never expired: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	kept, err := c.Get(ctx, key+":kept")
	if err != nil {
		return err
	}
	if err := expect(kept.Value == "kept", "a key with an hour's expiry is gone"); err != nil {
		return err
	}
	_, err = c.Set(ctx, key, "v", statestore.WithExpiry(-time.Second))
	return expect(errors.Is(err, statestore.ErrArgument), "a negative expiry was not refused locally: %v", err)
}

func caseSetPersist(ctx context.Context, e *env) error {
	c, stop, err := connect(ctx, e.prefix+"-a", e.url)
	if err != nil {
		return err
	}
	defer stop()
	key := e.prefix + ":persist"
	res, err := c.Set(ctx, key, "durable", statestore.WithPersist(true))
	if err != nil {
		return err
	}
	if err := expect(res.Value, "SET with persist not applied"); err != nil {
		return err
	}
	got, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	return expect(got.Value == "durable", "GET after a persistent SET: %q", got.Value)
}

func caseDelVDel(ctx context.Context, e *env) error {
	c, stop, err := connect(ctx, e.prefix+"-a", e.url)
	if err != nil {
		return err
	}
	defer stop()
	key := e.prefix + ":del"
	if _, err := c.Set(ctx, key, "x"); err != nil {
		return err
	}
	n, err := c.Del(ctx, key, statestore.WithTimeout(5*time.Second))
	if err != nil {
		return err
	}
	if err := expect(n.Value == 1, "DEL of an existing key: %d", n.Value); err != nil {
		return err
	}
	n, err = c.Del(ctx, key)
	if err != nil {
		return err
	}
	if err := expect(n.Value == 0, "DEL of a missing key: %d", n.Value); err != nil {
		return err
	}
	if _, err := c.Set(ctx, key, "mine"); err != nil {
		return err
	}
	n, err = c.VDel(ctx, key, "theirs")
	if err != nil {
		return err
	}
	if err := expect(n.Value == -1, "VDEL with another value: %d, want -1", n.Value); err != nil {
		return err
	}
	n, err = c.VDel(ctx, key, "mine")
	if err != nil {
		return err
	}
	if err := expect(n.Value == 1, "VDEL with the value: %d, want 1", n.Value); err != nil {
		return err
	}
	n, err = c.VDel(ctx, key, "mine")
	if err != nil {
		return err
	}
	if err := expect(n.Value == 0, "VDEL of a missing key: %d, want 0", n.Value); err != nil {
		return err
	}
	_, err = c.Del(ctx, "")
	return expect(errors.Is(err, statestore.ErrArgument), "an empty key was not refused locally: %v", err)
}

func caseFencing(ctx context.Context, e *env) error {
	a, stopA, err := connect(ctx, e.prefix+"-a", e.url)
	if err != nil {
		return err
	}
	defer stopA()
	b, stopB, err := connect(ctx, e.prefix+"-b", e.direct)
	if err != nil {
		return err
	}
	defer stopB()
	lockKey, key := e.prefix+":fence-lock", e.prefix+":fenced"
	leaseA := leasedlock.NewLease(a, lockKey)
	ok, err := leaseA.Acquire(ctx, 10*time.Second)
	if err != nil || !ok {
		return fmt.Errorf("first acquire: %v %v", ok, err)
	}
	t1, err := leaseA.Token(ctx)
	if err != nil {
		return err
	}
	if _, err := a.Set(ctx, key, "a1", statestore.WithFencingToken(t1)); err != nil {
		return fmt.Errorf("SET with the holder's token: %w", err)
	}
	_, err = a.Set(ctx, key, "bare")
	if err := expect(isService(err, sserrors.MissingFencingToken), "SET without a token on a fenced key: %v", err); err != nil {
		return err
	}
	_, err = a.Del(ctx, key)
	if err := expect(isService(err, sserrors.MissingFencingToken), "DEL without a token on a fenced key: %v", err); err != nil {
		return err
	}
	if err := leaseA.Release(ctx); err != nil {
		return err
	}
	leaseB := leasedlock.NewLease(b, lockKey)
	ok, err = leaseB.Acquire(ctx, 10*time.Second)
	if err != nil || !ok {
		return fmt.Errorf("second acquire: %v %v", ok, err)
	}
	t2, err := leaseB.Token(ctx)
	if err != nil {
		return err
	}
	if err := expect(t2.Compare(t1) > 0, "second token %v not after %v", t2, t1); err != nil {
		return err
	}
	if _, err := b.Set(ctx, key, "b1", statestore.WithFencingToken(t2)); err != nil {
		return fmt.Errorf("SET with the new holder's token: %w", err)
	}
	res, err := a.Set(ctx, key, "a2", statestore.WithFencingToken(t1))
	if err := expect(isService(err, sserrors.FencingTokenLowerVersion), "SET with the stale token: %v %v", res, err); err != nil {
		return err
	}
	_, err = a.Del(ctx, key, statestore.WithFencingToken(t1))
	if err := expect(isService(err, sserrors.FencingTokenLowerVersion), "DEL with the stale token: %v", err); err != nil {
		return err
	}
	_, err = a.VDel(ctx, key, "b1", statestore.WithFencingToken(t1))
	if err := expect(isService(err, sserrors.FencingTokenLowerVersion), "VDEL with the stale token: %v", err); err != nil {
		return err
	}
	got, err := b.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := expect(got.Value == "b1", "value after the stale writes: %q", got.Value); err != nil {
		return err
	}
	n, err := b.Del(ctx, key, statestore.WithFencingToken(t2))
	if err != nil {
		return err
	}
	if err := expect(n.Value == 1, "DEL with the current token: %d", n.Value); err != nil {
		return err
	}
	return leaseB.Release(ctx)
}

// nextNotify waits for the next notification on ch, or the case's deadline.
func nextNotify(ctx context.Context, ch <-chan statestore.Notify[string, string], what string) (statestore.Notify[string, string], error) {
	select {
	case n, ok := <-ch:
		if !ok {
			return n, fmt.Errorf("%s: the notification channel closed", what)
		}
		return n, nil
	case <-ctx.Done():
		return statestore.Notify[string, string]{}, fmt.Errorf("%s: no notification: %w", what, ctx.Err())
	}
}

func caseNotify(ctx context.Context, e *env) error {
	w, stopW, err := connect(ctx, e.prefix+"-watcher", e.url)
	if err != nil {
		return err
	}
	defer stopW()
	c, stopC, err := connect(ctx, e.prefix+"-writer", e.direct)
	if err != nil {
		return err
	}
	defer stopC()
	key := e.prefix + ":watched"
	ch, done := w.Notify(key)
	defer done()
	if err := w.KeyNotify(ctx, key); err != nil {
		return err
	}
	set, err := c.Set(ctx, key, "hello")
	if err != nil {
		return err
	}
	n, err := nextNotify(ctx, ch, "SET")
	if err != nil {
		return err
	}
	if err := expect(n.Key == key && n.Operation == "SET" && n.Value == "hello" && n.Version.Compare(set.Version) == 0,
		"SET notification: %s %s %q %v, want %s SET hello %v", n.Key, n.Operation, n.Value, n.Version, key, set.Version); err != nil {
		return err
	}
	if _, err := c.Del(ctx, key); err != nil {
		return err
	}
	n, err = nextNotify(ctx, ch, "DELETE")
	if err != nil {
		return err
	}
	if err := expect(n.Operation == "DELETE" && n.Value == "", "DEL notification: %s %q", n.Operation, n.Value); err != nil {
		return err
	}
	// An expiry is a DELETE too.
	if _, err := c.Set(ctx, key, "brief", statestore.WithExpiry(200*time.Millisecond)); err != nil {
		return err
	}
	if n, err = nextNotify(ctx, ch, "SET with expiry"); err != nil {
		return err
	}
	if n, err = nextNotify(ctx, ch, "expiry"); err != nil {
		return err
	}
	if err := expect(n.Operation == "DELETE", "expiry notification: %s", n.Operation); err != nil {
		return err
	}
	if err := w.KeyNotifyStop(ctx, key); err != nil {
		return err
	}
	// After STOP, a SET on the key is not told; a SET on another observed key still is, and comes
	// after it: so the first notification after STOP must be the other key's.
	other := key + ":other"
	och, odone := w.Notify(other)
	defer odone()
	if err := w.KeyNotify(ctx, other); err != nil {
		return err
	}
	if _, err := c.Set(ctx, key, "unwatched"); err != nil {
		return err
	}
	if _, err := c.Set(ctx, other, "watched"); err != nil {
		return err
	}
	if _, err := nextNotify(ctx, och, "the other key"); err != nil {
		return err
	}
	select {
	case n, ok := <-ch:
		if ok {
			return fmt.Errorf("a notification after KEYNOTIFY STOP: %s %q", n.Operation, n.Value)
		}
	default:
	}
	return w.KeyNotifyStop(ctx, other)
}

func caseNotifyReconnect(ctx context.Context, e *env) error {
	w, stopW, err := connect(ctx, e.prefix+"-watcher", e.url)
	if err != nil {
		return err
	}
	defer stopW()
	c, stopC, err := connect(ctx, e.prefix+"-writer", e.direct)
	if err != nil {
		return err
	}
	defer stopC()
	key := e.prefix + ":watched-across"
	ch, done := w.Notify(key)
	defer done()
	if err := w.KeyNotify(ctx, key); err != nil {
		return err
	}
	if _, err := c.Set(ctx, key, "before"); err != nil {
		return err
	}
	if n, err := nextNotify(ctx, ch, "before the cut"); err != nil || n.Value != "before" {
		return fmt.Errorf("before the cut: %q %v", n.Value, err)
	}
	if err := e.step("drop the watcher's connection"); err != nil {
		return err
	}
	// On reconnect the SDK sends KEYNOTIFY again and reports the key's value as a SET.
	n, err := nextNotify(ctx, ch, "the reconnect's own report")
	if err != nil {
		return err
	}
	if err := expect(n.Operation == "SET" && n.Value == "before", "reconnect report: %s %q", n.Operation, n.Value); err != nil {
		return err
	}
	if _, err := c.Set(ctx, key, "after"); err != nil {
		return err
	}
	n, err = nextNotify(ctx, ch, "after the reconnect")
	if err != nil {
		return err
	}
	return expect(n.Operation == "SET" && n.Value == "after", "after the reconnect: %s %q", n.Operation, n.Value)
}

func caseLease(ctx context.Context, e *env) error {
	a, stopA, err := connect(ctx, e.prefix+"-a", e.url)
	if err != nil {
		return err
	}
	defer stopA()
	b, stopB, err := connect(ctx, e.prefix+"-b", e.direct)
	if err != nil {
		return err
	}
	defer stopB()
	name := e.prefix + ":lease"
	la, lb := leasedlock.NewLease(a, name), leasedlock.NewLease(b, name, leasedlock.WithSessionID("s2"))
	if _, err := la.Token(ctx); !errors.Is(err, leasedlock.ErrNoLease) {
		return fmt.Errorf("token before any acquire: %v", err)
	}
	ok, err := la.Acquire(ctx, 10*time.Second, leasedlock.WithTimeout(5*time.Second))
	if err != nil || !ok {
		return fmt.Errorf("acquire: %v %v", ok, err)
	}
	holder, held, err := lb.Holder(ctx)
	if err != nil {
		return err
	}
	if err := expect(held && holder == a.ID(), "holder: %q %v, want %q", holder, held, a.ID()); err != nil {
		return err
	}
	ok, err = lb.Acquire(ctx, 10*time.Second)
	if err != nil {
		return err
	}
	if err := expect(!ok, "a second holder acquired a held lease"); err != nil {
		return err
	}
	if _, err := lb.Token(ctx); !errors.Is(err, leasedlock.ErrNoLease) {
		return fmt.Errorf("the loser's token: %v", err)
	}
	// Renewing is acquiring again: a new, greater token.
	t1, _ := la.Token(ctx)
	if ok, err := la.Acquire(ctx, 10*time.Second); err != nil || !ok {
		return fmt.Errorf("renew: %v %v", ok, err)
	}
	t2, _ := la.Token(ctx)
	if err := expect(t2.Compare(t1) > 0, "renewed token %v not after %v", t2, t1); err != nil {
		return err
	}
	// Release by the loser does nothing.
	if err := lb.Release(ctx); err != nil {
		return err
	}
	if _, held, _ := la.Holder(ctx); !held {
		return fmt.Errorf("the loser's release freed the lease")
	}
	if err := la.Release(ctx); err != nil {
		return err
	}
	if _, held, _ := la.Holder(ctx); held {
		return fmt.Errorf("held after release")
	}
	ok, err = lb.Acquire(ctx, 10*time.Second)
	if err != nil || !ok {
		return fmt.Errorf("acquire after release: %v %v", ok, err)
	}
	holder, _, _ = la.Holder(ctx)
	if err := expect(holder == b.ID()+":s2", "holder with a session id: %q", holder); err != nil {
		return err
	}
	// A lease that is not renewed runs out.
	short := leasedlock.NewLease(a, name+":short")
	if ok, err := short.Acquire(ctx, 200*time.Millisecond); err != nil || !ok {
		return fmt.Errorf("short acquire: %v %v", ok, err)
	}
	for {
		if _, held, err := short.Holder(ctx); err != nil {
			return err
		} else if !held {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the short lease never ran out")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return lb.Release(ctx)
}

func caseLeaseRenew(ctx context.Context, e *env) error {
	a, stopA, err := connect(ctx, e.prefix+"-a", e.url)
	if err != nil {
		return err
	}
	defer stopA()
	name := e.prefix + ":renewed"
	l := leasedlock.NewLease(a, name)
	ok, err := l.Acquire(ctx, 3*time.Second, leasedlock.WithRenew(100*time.Millisecond))
	if err != nil || !ok {
		return fmt.Errorf("acquire: %v %v", ok, err)
	}
	first, err := a.Get(ctx, name)
	if err != nil {
		return err
	}
	// Each renewal is a SET: the key's version moves on while the lease stays with us.
	seen := first.Version
	for renewals := 0; renewals < 3; {
		got, err := a.Get(ctx, name)
		if err != nil {
			return err
		}
		if err := expect(got.Value == a.ID(), "holder while renewing: %q", got.Value); err != nil {
			return err
		}
		if got.Version.Compare(seen) > 0 {
			renewals++
			seen = got.Version
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d renewals seen", renewals)
		case <-time.After(30 * time.Millisecond):
		}
	}
	tok, err := l.Token(ctx)
	if err != nil {
		return err
	}
	if err := expect(tok.Compare(first.Version) > 0, "token after renewals %v not after %v", tok, first.Version); err != nil {
		return err
	}
	if err := l.Release(ctx); err != nil {
		return err
	}
	got, err := a.Get(ctx, name)
	if err != nil {
		return err
	}
	return expect(got.Version.IsZero(), "the lease's key is still there after release: %q", got.Value)
}

func caseLeaseObserve(ctx context.Context, e *env) error {
	a, stopA, err := connect(ctx, e.prefix+"-a", e.url)
	if err != nil {
		return err
	}
	defer stopA()
	b, stopB, err := connect(ctx, e.prefix+"-b", e.direct)
	if err != nil {
		return err
	}
	defer stopB()
	name := e.prefix + ":observed"
	watch, holder := leasedlock.NewLease(a, name), leasedlock.NewLease(b, name)
	changes, done := watch.Observe()
	defer done()
	if err := watch.ObserveStart(ctx); err != nil {
		return err
	}
	next := func(what string) (leasedlock.Change, error) {
		select {
		case c := <-changes:
			return c, nil
		case <-ctx.Done():
			return leasedlock.Change{}, fmt.Errorf("%s: no change: %w", what, ctx.Err())
		}
	}
	if ok, err := holder.Acquire(ctx, 10*time.Second); err != nil || !ok {
		return fmt.Errorf("acquire: %v %v", ok, err)
	}
	c, err := next("acquired")
	if err != nil {
		return err
	}
	if err := expect(c.Held && c.Holder == b.ID(), "acquired change: %+v", c); err != nil {
		return err
	}
	if err := holder.Release(ctx); err != nil {
		return err
	}
	c, err = next("released")
	if err != nil {
		return err
	}
	if err := expect(!c.Held, "released change: %+v", c); err != nil {
		return err
	}
	return watch.ObserveStop(ctx)
}

// caseLockEdit: two clients edit one counter under the SDK's lock, n turns each: the count is exact.
func caseLockEdit(ctx context.Context, e *env) error {
	name, key := e.prefix+":edit-lock", e.prefix+":edit-counter"
	errs := make(chan error, 2)
	for i, u := range []string{e.url, e.direct} {
		go func() {
			c, stop, err := connect(ctx, fmt.Sprintf("%s-editor%d", e.prefix, i), u)
			if err != nil {
				errs <- err
				return
			}
			defer stop()
			errs <- editCounter(ctx, leasedlock.NewLock(c, name), key, e.n, 5*time.Second)
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			return err
		}
	}
	c, stop, err := connect(ctx, e.prefix+"-reader", e.direct)
	if err != nil {
		return err
	}
	defer stop()
	got, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	return expect(got.Value == strconv.Itoa(2*e.n), "counter after %d edits: %q", 2*e.n, got.Value)
}

// editCounter adds one to the decimal counter at key, n times, each under the lock (Lock.Edit:
// lock, GET, SET with the lock's fencing token, unlock).
func editCounter(ctx context.Context, lock leasedlock.Lock[string, string], key string, n int, lease time.Duration) error {
	for i := 0; i < n; i++ {
		err := lock.Edit(ctx, key, lease, func(_ context.Context, old string, exists bool) (string, bool, error) {
			v := 0
			if exists {
				var err error
				if v, err = strconv.Atoi(old); err != nil {
					return "", false, fmt.Errorf("counter %q: %w", old, err)
				}
			}
			return strconv.Itoa(v + 1), true, nil
		})
		if err != nil {
			return fmt.Errorf("edit %d: %w", i+1, err)
		}
	}
	return nil
}

// caseCounter: this process's share of a counter that other programs (a Node-RED flow) edit under
// the same lock.
func caseCounter(ctx context.Context, e *env) error {
	c, stop, err := connect(ctx, e.prefix+"-counter", e.url)
	if err != nil {
		return err
	}
	defer stop()
	return editCounter(ctx, leasedlock.NewLock(c, e.lockName), e.counter, e.n, time.Duration(e.holdMs)*time.Millisecond)
}

// caseFenceGoFirst: Go holds the lock and writes, releases; the test's own lock holder writes with
// its newer token; Go's write with its old token is then refused.
func caseFenceGoFirst(ctx context.Context, e *env) error {
	c, stop, err := connect(ctx, e.prefix+"-fencer", e.url)
	if err != nil {
		return err
	}
	defer stop()
	lease := leasedlock.NewLease(c, e.lockName)
	if ok, err := lease.Acquire(ctx, 10*time.Second); err != nil || !ok {
		return fmt.Errorf("acquire: %v %v", ok, err)
	}
	token, err := lease.Token(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Set(ctx, e.counter, "go", statestore.WithFencingToken(token)); err != nil {
		return fmt.Errorf("SET with Go's token: %w", err)
	}
	if err := lease.Release(ctx); err != nil {
		return err
	}
	if err := e.step("released: take the lock and write with its token"); err != nil {
		return err
	}
	_, err = c.Set(ctx, e.counter, "go-stale", statestore.WithFencingToken(token))
	return expect(isService(err, sserrors.FencingTokenLowerVersion), "SET with Go's old token after a newer holder wrote: %v", err)
}

// caseFenceOursFirst: the test's lock holder wrote and released; Go takes the lock, writes with its
// newer token, and tells the test to try its old one.
func caseFenceOursFirst(ctx context.Context, e *env) error {
	c, stop, err := connect(ctx, e.prefix+"-fencer", e.url)
	if err != nil {
		return err
	}
	defer stop()
	lease := leasedlock.NewLease(c, e.lockName)
	if ok, err := lease.Acquire(ctx, 10*time.Second); err != nil || !ok {
		return fmt.Errorf("acquire: %v %v", ok, err)
	}
	token, err := lease.Token(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Set(ctx, e.counter, "go", statestore.WithFencingToken(token)); err != nil {
		return fmt.Errorf("SET with Go's newer token: %w", err)
	}
	fmt.Printf("TOKEN %s\n", token)
	if err := e.step("written: write with your old token"); err != nil {
		return err
	}
	return lease.Release(ctx)
}

// caseBench: a contender in bench/lock.mjs: edits the shared counter under the SDK's lock
// (Lock.Edit) until it reaches -n, with each turn's time (lock wait included) on a line
// "TURN <ms>"; it starts on the go-ahead, so that every contender starts together.
func caseBench(ctx context.Context, e *env) error {
	c, stop, err := connect(ctx, e.prefix+"-bench", e.url)
	if err != nil {
		return err
	}
	defer stop()
	lock := leasedlock.NewLock(c, e.lockName)
	if err := e.step("connected"); err != nil {
		return err
	}
	lease := time.Duration(e.holdMs) * time.Millisecond
	for {
		reached := false
		start := time.Now()
		err := lock.Edit(ctx, e.counter, lease, func(_ context.Context, old string, exists bool) (string, bool, error) {
			v := 0
			if exists {
				var err error
				if v, err = strconv.Atoi(old); err != nil {
					return "", false, fmt.Errorf("counter %q: %w", old, err)
				}
			}
			if v >= e.n {
				reached = true
				return old, true, nil
			}
			return strconv.Itoa(v + 1), true, nil
		})
		if err != nil {
			return err
		}
		if reached {
			return nil
		}
		fmt.Printf("TURN %.3f\n", float64(time.Since(start).Microseconds())/1000)
		// A flow's msgs do not come back to back, nor do ours in the benchmark.
		time.Sleep(time.Millisecond)
	}
}
