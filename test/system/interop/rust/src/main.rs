//! One case of the interop lane against a state store (the emulator): the official Rust SDK's state
//! store, lease and lock clients, used as an application would use them.
//!
//!     interop --case NAME --url mqtt://127.0.0.1:PORT [--direct mqtt://…] [--prefix P] [--n N]
//!
//! Prints "PASS <case>" and exits 0 when every expectation held, or prints the first one that did
//! not and exits 1. A case that needs the test to act midway prints "STEP <what>" and reads one line
//! from stdin before it goes on. --url is the connection under test (a relay the test can cut);
//! --direct is the one a case's second client uses.

use std::sync::Arc;
use std::time::Duration;

use azure_iot_operations_mqtt::aio::connection_settings::MqttConnectionSettingsBuilder;
use azure_iot_operations_mqtt::session::{
    Session, SessionExitHandle, SessionMonitor, SessionOptionsBuilder,
};
use azure_iot_operations_protocol::application::ApplicationContextBuilder;
use azure_iot_operations_protocol::common::hybrid_logical_clock::HybridLogicalClock;
use azure_iot_operations_services::leased_lock::{self, lease, lock};
use azure_iot_operations_services::state_store::{
    self, KeyObservation, Operation, ServiceError, SetCondition, SetOptions,
};
use tokio::io::{AsyncBufReadExt, BufReader};

const T: Duration = Duration::from_secs(10);

type Res = Result<(), String>;

struct Env {
    url: String,
    direct: String,
    prefix: String,
    n: usize,
    lock_name: String,
    key: String,
    lease_ms: u64,
}

struct Conn {
    id: String,
    store: Arc<state_store::Client>,
    monitor: SessionMonitor,
    exit: SessionExitHandle,
}

impl Conn {
    async fn close(self) {
        let _ = self.store.shutdown().await;
        if self.exit.try_exit().is_err() {
            self.exit.force_exit();
        }
    }
}

fn host_port(url: &str) -> Result<(String, u16), String> {
    let rest = url
        .strip_prefix("mqtt://")
        .ok_or_else(|| format!("not an mqtt:// URL: {url}"))?;
    let (host, port) = rest
        .trim_end_matches('/')
        .rsplit_once(':')
        .ok_or_else(|| format!("no port in {url}"))?;
    Ok((
        host.to_string(),
        port.parse().map_err(|e| format!("port of {url}: {e}"))?,
    ))
}

/// A session with this client id on the URL, run in the background, and a state store client over
/// it, once the first CONNACK came.
async fn connect(id: &str, url: &str) -> Result<Conn, String> {
    let (host, port) = host_port(url)?;
    let settings = MqttConnectionSettingsBuilder::default()
        .client_id(id)
        .hostname(host)
        .tcp_port(port)
        .keep_alive(Duration::from_secs(10))
        .clean_start(true)
        .use_tls(false)
        .build()
        .map_err(|e| e.to_string())?;
    let options = SessionOptionsBuilder::default()
        .connection_settings(settings)
        .build()
        .map_err(|e| e.to_string())?;
    let session = Session::new(options).map_err(|e| e.to_string())?;
    let app = ApplicationContextBuilder::default()
        .build()
        .map_err(|e| e.to_string())?;
    let store = state_store::Client::new(
        app,
        session.create_managed_client(),
        session.create_session_monitor(),
        state_store::ClientOptionsBuilder::default()
            .build()
            .map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let monitor = session.create_session_monitor();
    let exit = session.create_exit_handle();
    tokio::spawn(session.run());
    monitor.connected().await;
    Ok(Conn {
        id: id.to_string(),
        store: Arc::new(store),
        monitor,
        exit,
    })
}

fn expect(cond: bool, what: impl FnOnce() -> String) -> Res {
    if cond {
        Ok(())
    } else {
        Err(what())
    }
}

/// Whether version a comes after b (the service's versions order by time, then counter).
fn after(a: &HybridLogicalClock, b: &HybridLogicalClock) -> bool {
    (a.timestamp, a.counter) > (b.timestamp, b.counter)
}

fn e2s<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Whether err is the state store's refusal `want`.
fn is_service(err: &state_store::Error, want: fn(&ServiceError) -> bool) -> bool {
    matches!(err.kind(), state_store::ErrorKind::ServiceError(s) if want(s))
}

async fn step(what: &str) -> Res {
    println!("STEP {what}");
    let mut line = String::new();
    BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await
        .map_err(e2s)?;
    expect(!line.is_empty(), || format!("no go-ahead after {what:?}"))
}

fn opts(condition: SetCondition, expires: Option<Duration>, persist: bool) -> SetOptions {
    SetOptions {
        set_condition: condition,
        expires,
        persist,
    }
}

async fn set(c: &Conn, key: &str, value: &[u8]) -> Result<state_store::Response<bool>, String> {
    c.store
        .set(key.into(), value.to_vec(), T, None, SetOptions::default())
        .await
        .map_err(e2s)
}

async fn next(
    obs: &mut KeyObservation,
    what: &str,
) -> Result<state_store::KeyNotification, String> {
    match obs.recv_notification().await {
        Some((n, _)) => Ok(n),
        None => Err(format!("{what}: the observation ended")),
    }
}

async fn case_set_get(e: &Env) -> Res {
    let c = connect(&format!("{}-a", e.prefix), &e.url).await?;
    let key = format!("{}:set-get", e.prefix);
    let missing = c.store.get(key.clone().into(), T).await.map_err(e2s)?;
    expect(missing.response.is_none(), || {
        format!("GET of a missing key: {:?}", missing.response)
    })?;
    let first = set(&c, &key, b"one").await?;
    expect(first.response && first.version.is_some(), || {
        format!("SET: {first:?}")
    })?;
    let got = c.store.get(key.clone().into(), T).await.map_err(e2s)?;
    expect(
        got.response.as_deref() == Some(b"one".as_slice()) && got.version == first.version,
        || format!("GET after SET: {got:?}"),
    )?;
    let second = set(&c, &key, b"two").await?;
    expect(
        matches!((&second.version, &first.version), (Some(s), Some(f)) if after(s, f)),
        || {
            format!(
                "second version {:?} not after {:?}",
                second.version, first.version
            )
        },
    )?;
    let mut binary = b"\x00\r\n\xff".to_vec();
    binary.extend(std::iter::repeat_n(0u8, 300));
    c.store
        .set(
            key.clone().into(),
            binary.clone(),
            T,
            None,
            SetOptions::default(),
        )
        .await
        .map_err(e2s)?;
    let got = c.store.get(key.into(), T).await.map_err(e2s)?;
    let r = expect(got.response == Some(binary), || {
        "binary value changed".into()
    });
    c.close().await;
    r
}

async fn case_set_conditions(e: &Env) -> Res {
    let c = connect(&format!("{}-a", e.prefix), &e.url).await?;
    let key = format!("{}:cond", e.prefix);
    let s = |k: &str, v: &'static [u8], cond: SetCondition| {
        c.store
            .set(k.into(), v.to_vec(), T, None, opts(cond, None, false))
    };
    expect(
        s(&key, b"v1", SetCondition::OnlyIfDoesNotExist)
            .await
            .map_err(e2s)?
            .response,
        || "NX on a missing key not applied".into(),
    )?;
    expect(
        !s(&key, b"v2", SetCondition::OnlyIfDoesNotExist)
            .await
            .map_err(e2s)?
            .response,
        || "NX on an existing key applied".into(),
    )?;
    expect(
        s(&key, b"v1", SetCondition::OnlyIfEqualOrDoesNotExist)
            .await
            .map_err(e2s)?
            .response,
        || "NEX with the equal value not applied".into(),
    )?;
    expect(
        !s(&key, b"v3", SetCondition::OnlyIfEqualOrDoesNotExist)
            .await
            .map_err(e2s)?
            .response,
        || "NEX with another value applied".into(),
    )?;
    let other = format!("{key}:nex-missing");
    expect(
        s(&other, b"v", SetCondition::OnlyIfEqualOrDoesNotExist)
            .await
            .map_err(e2s)?
            .response,
        || "NEX on a missing key not applied".into(),
    )?;
    let got = c.store.get(key.into(), T).await.map_err(e2s)?;
    let r = expect(got.response.as_deref() == Some(b"v1".as_slice()), || {
        format!("value after the conditions: {got:?}")
    });
    c.close().await;
    r
}

async fn case_set_expiry(e: &Env) -> Res {
    let c = connect(&format!("{}-a", e.prefix), &e.url).await?;
    let key = format!("{}:px", e.prefix);
    c.store
        .set(
            key.clone().into(),
            b"soon".to_vec(),
            T,
            None,
            opts(
                SetCondition::Unconditional,
                Some(Duration::from_millis(300)),
                false,
            ),
        )
        .await
        .map_err(e2s)?;
    // Gone within the case's deadline; no bound of our own on how soon.
    loop {
        let got = c.store.get(key.clone().into(), T).await.map_err(e2s)?;
        match got.response {
            None => break,
            Some(v) => expect(v == b"soon", || format!("value before expiry: {v:?}"))?,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.close().await;
    Ok(())
}

async fn case_set_persist(e: &Env) -> Res {
    let c = connect(&format!("{}-a", e.prefix), &e.url).await?;
    let key = format!("{}:persist", e.prefix);
    let res = c
        .store
        .set(
            key.clone().into(),
            b"durable".to_vec(),
            T,
            None,
            opts(SetCondition::Unconditional, None, true),
        )
        .await
        .map_err(e2s)?;
    expect(res.response, || "SET with persist not applied".into())?;
    let got = c.store.get(key.into(), T).await.map_err(e2s)?;
    let r = expect(
        got.response.as_deref() == Some(b"durable".as_slice()),
        || format!("GET after a persistent SET: {got:?}"),
    );
    c.close().await;
    r
}

async fn case_del_vdel(e: &Env) -> Res {
    let c = connect(&format!("{}-a", e.prefix), &e.url).await?;
    let key = format!("{}:del", e.prefix);
    set(&c, &key, b"x").await?;
    let n = c
        .store
        .del(key.clone().into(), None, T)
        .await
        .map_err(e2s)?
        .response;
    expect(n == 1, || format!("DEL of an existing key: {n}"))?;
    let n = c
        .store
        .del(key.clone().into(), None, T)
        .await
        .map_err(e2s)?
        .response;
    expect(n == 0, || format!("DEL of a missing key: {n}"))?;
    set(&c, &key, b"mine").await?;
    let n = c
        .store
        .vdel(key.clone().into(), b"theirs".to_vec(), None, T)
        .await
        .map_err(e2s)?
        .response;
    expect(n == -1, || format!("VDEL with another value: {n}, want -1"))?;
    let n = c
        .store
        .vdel(key.clone().into(), b"mine".to_vec(), None, T)
        .await
        .map_err(e2s)?
        .response;
    expect(n == 1, || format!("VDEL with the value: {n}, want 1"))?;
    let n = c
        .store
        .vdel(key.into(), b"mine".to_vec(), None, T)
        .await
        .map_err(e2s)?
        .response;
    expect(n == 0, || format!("VDEL of a missing key: {n}, want 0"))?;
    let err = c.store.del(Vec::new(), None, T).await;
    let r = expect(
        matches!(
            err.as_ref().map_err(|e| e.kind()),
            Err(state_store::ErrorKind::InvalidArgument(_))
        ),
        || format!("an empty key was not refused locally: {err:?}"),
    );
    c.close().await;
    r
}

async fn case_fencing(e: &Env) -> Res {
    let a = connect(&format!("{}-a", e.prefix), &e.url).await?;
    let b = connect(&format!("{}-b", e.prefix), &e.direct).await?;
    let lock_key = format!("{}:fence-lock", e.prefix);
    let key = format!("{}:fenced", e.prefix);
    let la = lease::Client::new(
        a.store.clone(),
        lock_key.clone().into(),
        a.id.clone().into(),
    )
    .map_err(e2s)?;
    let t1 = la
        .acquire(Duration::from_secs(10), T, None)
        .await
        .map_err(e2s)?;
    let put = |c: &Conn, v: &'static [u8], ft: Option<HybridLogicalClock>| {
        let store = c.store.clone();
        let key = key.clone();
        async move {
            store
                .set(key.into(), v.to_vec(), T, ft, SetOptions::default())
                .await
        }
    };
    put(&a, b"a1", Some(t1.clone()))
        .await
        .map_err(|e| format!("SET with the holder's token: {e:?}"))?;
    let r = put(&a, b"bare", None).await;
    expect(
        matches!(&r, Err(err) if is_service(err, |s| matches!(s, ServiceError::MissingFencingToken))),
        || format!("SET without a token on a fenced key: {r:?}"),
    )?;
    la.release(T).await.map_err(e2s)?;
    let lb =
        lease::Client::new(b.store.clone(), lock_key.into(), b.id.clone().into()).map_err(e2s)?;
    let t2 = lb
        .acquire(Duration::from_secs(10), T, None)
        .await
        .map_err(e2s)?;
    expect(after(&t2, &t1), || {
        format!("second token {t2} not after {t1}")
    })?;
    put(&b, b"b1", Some(t2.clone()))
        .await
        .map_err(|e| format!("SET with the new holder's token: {e:?}"))?;
    let r = put(&a, b"a2", Some(t1.clone())).await;
    expect(
        matches!(&r, Err(err) if is_service(err, |s| matches!(s, ServiceError::FencingTokenLowerVersion))),
        || format!("SET with the stale token: {r:?}"),
    )?;
    let r = a.store.del(key.clone().into(), Some(t1.clone()), T).await;
    expect(
        matches!(&r, Err(err) if is_service(err, |s| matches!(s, ServiceError::FencingTokenLowerVersion))),
        || format!("DEL with the stale token: {r:?}"),
    )?;
    let r = a
        .store
        .vdel(key.clone().into(), b"b1".to_vec(), Some(t1), T)
        .await;
    expect(
        matches!(&r, Err(err) if is_service(err, |s| matches!(s, ServiceError::FencingTokenLowerVersion))),
        || format!("VDEL with the stale token: {r:?}"),
    )?;
    let got = b.store.get(key.clone().into(), T).await.map_err(e2s)?;
    expect(got.response.as_deref() == Some(b"b1".as_slice()), || {
        format!("value after the stale writes: {got:?}")
    })?;
    let n = b
        .store
        .del(key.into(), Some(t2), T)
        .await
        .map_err(e2s)?
        .response;
    expect(n == 1, || format!("DEL with the current token: {n}"))?;
    lb.release(T).await.map_err(e2s)?;
    a.close().await;
    b.close().await;
    Ok(())
}

async fn case_notify(e: &Env) -> Res {
    let w = connect(&format!("{}-watcher", e.prefix), &e.url).await?;
    let c = connect(&format!("{}-writer", e.prefix), &e.direct).await?;
    let key = format!("{}:watched", e.prefix);
    let mut obs = w
        .store
        .observe(key.clone().into(), T)
        .await
        .map_err(e2s)?
        .response;
    let dup = w.store.observe(key.clone().into(), T).await;
    expect(
        matches!(
            dup.as_ref().map_err(|e| e.kind()),
            Err(state_store::ErrorKind::DuplicateObserve)
        ),
        || format!("a second observe of the key: {dup:?}"),
    )?;
    let s = set(&c, &key, b"hello").await?;
    let n = next(&mut obs, "SET").await?;
    expect(
        n.key == key.as_bytes()
            && matches!(&n.operation, Operation::Set(v) if v == b"hello")
            && Some(n.version.clone()) == s.version,
        || format!("SET notification: {n}"),
    )?;
    c.store
        .del(key.clone().into(), None, T)
        .await
        .map_err(e2s)?;
    let n = next(&mut obs, "DEL").await?;
    expect(matches!(n.operation, Operation::Del), || {
        format!("DEL notification: {n}")
    })?;
    c.store
        .set(
            key.clone().into(),
            b"brief".to_vec(),
            T,
            None,
            opts(
                SetCondition::Unconditional,
                Some(Duration::from_millis(200)),
                false,
            ),
        )
        .await
        .map_err(e2s)?;
    next(&mut obs, "SET with expiry").await?;
    let n = next(&mut obs, "expiry").await?;
    expect(matches!(n.operation, Operation::Del), || {
        format!("expiry notification: {n}")
    })?;
    let was = w
        .store
        .unobserve(key.clone().into(), T)
        .await
        .map_err(e2s)?
        .response;
    expect(was, || {
        "unobserve of an observed key said it was not observed".into()
    })?;
    // The observation ends after unobserve.
    expect(obs.recv_notification().await.is_none(), || {
        "a notification after unobserve".into()
    })?;
    let was = w
        .store
        .unobserve(key.clone().into(), T)
        .await
        .map_err(e2s)?
        .response;
    expect(!was, || {
        "unobserve of an unobserved key said it was observed".into()
    })?;
    // Observed again after unobserve: works.
    let mut again = w
        .store
        .observe(key.clone().into(), T)
        .await
        .map_err(e2s)?
        .response;
    set(&c, &key, b"again").await?;
    let n = next(&mut again, "after observing again").await?;
    expect(
        matches!(&n.operation, Operation::Set(v) if v == b"again"),
        || format!("after observing again: {n}"),
    )?;
    w.store.unobserve(key.into(), T).await.map_err(e2s)?;
    w.close().await;
    c.close().await;
    Ok(())
}

async fn case_notify_reconnect(e: &Env) -> Res {
    let w = connect(&format!("{}-watcher", e.prefix), &e.url).await?;
    let c = connect(&format!("{}-writer", e.prefix), &e.direct).await?;
    let key = format!("{}:watched-across", e.prefix);
    let mut obs = w
        .store
        .observe(key.clone().into(), T)
        .await
        .map_err(e2s)?
        .response;
    set(&c, &key, b"before").await?;
    next(&mut obs, "before the cut").await?;
    step("drop the watcher's connection").await?;
    // The SDK ends every observation on a disconnect; the application observes again.
    expect(obs.recv_notification().await.is_none(), || {
        "the observation went on across the disconnect".into()
    })?;
    w.monitor.connected().await;
    let mut obs = loop {
        match w.store.observe(key.clone().into(), T).await {
            Ok(r) => break r.response,
            Err(err) if matches!(err.kind(), state_store::ErrorKind::DuplicateObserve) => {
                // The client forgets the ended observation on its own time.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => return Err(format!("observe after the reconnect: {err:?}")),
        }
    };
    set(&c, &key, b"after").await?;
    let n = next(&mut obs, "after the reconnect").await?;
    expect(
        matches!(&n.operation, Operation::Set(v) if v == b"after"),
        || format!("after the reconnect: {n}"),
    )?;
    w.close().await;
    c.close().await;
    Ok(())
}

async fn case_lease(e: &Env) -> Res {
    let a = connect(&format!("{}-a", e.prefix), &e.url).await?;
    let b = connect(&format!("{}-b", e.prefix), &e.direct).await?;
    let name = format!("{}:lease", e.prefix);
    let la = lease::Client::new(a.store.clone(), name.clone().into(), a.id.clone().into())
        .map_err(e2s)?;
    let lb = lease::Client::new(b.store.clone(), name.clone().into(), b.id.clone().into())
        .map_err(e2s)?;
    expect(la.current_lease_fencing_token().is_none(), || {
        "a token before any acquire".into()
    })?;
    let t1 = la
        .acquire(Duration::from_secs(10), T, None)
        .await
        .map_err(e2s)?;
    expect(la.current_lease_fencing_token() == Some(t1.clone()), || {
        "current token is not the acquired one".into()
    })?;
    let holder = lb.get_holder(T).await.map_err(e2s)?;
    expect(holder.as_deref() == Some(a.id.as_bytes()), || {
        format!("holder: {holder:?}")
    })?;
    let r = lb.acquire(Duration::from_secs(10), T, None).await;
    expect(
        matches!(
            r.as_ref().map_err(|e| e.kind()),
            Err(leased_lock::ErrorKind::LeaseAlreadyHeld)
        ),
        || format!("a second holder: {r:?}"),
    )?;
    let t2 = la
        .acquire(Duration::from_secs(10), T, None)
        .await
        .map_err(e2s)?;
    expect(after(&t2, &t1), || {
        format!("renewed token {t2} not after {t1}")
    })?;
    lb.release(T).await.map_err(e2s)?;
    expect(la.get_holder(T).await.map_err(e2s)?.is_some(), || {
        "the loser's release freed the lease".into()
    })?;
    la.release(T).await.map_err(e2s)?;
    expect(la.current_lease_fencing_token().is_none(), || {
        "a token after release".into()
    })?;
    expect(la.get_holder(T).await.map_err(e2s)?.is_none(), || {
        "held after release".into()
    })?;
    lb.acquire(Duration::from_secs(10), T, None)
        .await
        .map_err(e2s)?;
    // Auto-renewal: the key's version moves on while the lease stays with its holder.
    let renewed = lease::Client::new(
        a.store.clone(),
        format!("{name}:renewed").into(),
        a.id.clone().into(),
    )
    .map_err(e2s)?;
    let first = renewed
        .acquire(Duration::from_secs(3), T, Some(Duration::from_millis(100)))
        .await
        .map_err(e2s)?;
    loop {
        match renewed.current_lease_fencing_token() {
            Some(t) if after(&t, &first) => break,
            Some(_) => tokio::time::sleep(Duration::from_millis(30)).await,
            None => return Err("auto-renewal lost the lease".into()),
        }
    }
    renewed.release(T).await.map_err(e2s)?;
    // A lease not renewed runs out.
    let short = lease::Client::new(
        a.store.clone(),
        format!("{name}:short").into(),
        a.id.clone().into(),
    )
    .map_err(e2s)?;
    short
        .acquire(Duration::from_millis(200), T, None)
        .await
        .map_err(e2s)?;
    while short.get_holder(T).await.map_err(e2s)?.is_some() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    lb.release(T).await.map_err(e2s)?;
    a.close().await;
    b.close().await;
    Ok(())
}

async fn case_lease_observe(e: &Env) -> Res {
    let a = connect(&format!("{}-a", e.prefix), &e.url).await?;
    let b = connect(&format!("{}-b", e.prefix), &e.direct).await?;
    let name = format!("{}:observed", e.prefix);
    let watch = lease::Client::new(a.store.clone(), name.clone().into(), a.id.clone().into())
        .map_err(e2s)?;
    let holder =
        lease::Client::new(b.store.clone(), name.into(), b.id.clone().into()).map_err(e2s)?;
    let mut obs = watch.observe(T).await.map_err(e2s)?;
    holder
        .acquire(Duration::from_secs(10), T, None)
        .await
        .map_err(e2s)?;
    let n = next(&mut obs, "acquired").await?;
    expect(
        matches!(&n.operation, Operation::Set(v) if v == b.id.as_bytes()),
        || format!("acquired: {n}"),
    )?;
    holder.release(T).await.map_err(e2s)?;
    let n = next(&mut obs, "released").await?;
    expect(matches!(n.operation, Operation::Del), || {
        format!("released: {n}")
    })?;
    watch.unobserve(T).await.map_err(e2s)?;
    a.close().await;
    b.close().await;
    Ok(())
}

/// n turns of: lock, GET, SET the counter plus one with the lock's token, unlock.
async fn edit_counter(c: &Conn, lock_name: &str, key: &str, n: usize, lease: Duration) -> Res {
    let lock =
        lock::Client::new(c.store.clone(), lock_name.into(), c.id.clone().into()).map_err(e2s)?;
    for i in 0..n {
        let token = lock
            .lock(lease, T, None)
            .await
            .map_err(|e| format!("lock {}: {e:?}", i + 1))?;
        let old = c.store.get(key.into(), T).await.map_err(e2s)?.response;
        let v: u64 = match old {
            None => 0,
            Some(b) => String::from_utf8_lossy(&b)
                .parse()
                .map_err(|e| format!("counter {b:?}: {e}"))?,
        };
        let r = c
            .store
            .set(
                key.into(),
                (v + 1).to_string().into_bytes(),
                T,
                Some(token),
                SetOptions::default(),
            )
            .await
            .map_err(e2s)?;
        expect(r.response, || format!("edit {} not applied", i + 1))?;
        lock.unlock(T).await.map_err(e2s)?;
    }
    Ok(())
}

async fn case_lock_edit(e: &Env) -> Res {
    let name = format!("{}:edit-lock", e.prefix);
    let key = format!("{}:edit-counter", e.prefix);
    let a = connect(&format!("{}-editor0", e.prefix), &e.url).await?;
    let b = connect(&format!("{}-editor1", e.prefix), &e.direct).await?;
    let (ra, rb) = tokio::join!(
        edit_counter(&a, &name, &key, e.n, Duration::from_secs(5)),
        edit_counter(&b, &name, &key, e.n, Duration::from_secs(5))
    );
    ra?;
    rb?;
    let got = a.store.get(key.into(), T).await.map_err(e2s)?;
    let want = (2 * e.n).to_string();
    let r = expect(got.response.as_deref() == Some(want.as_bytes()), || {
        format!("counter after {want} edits: {got:?}")
    });
    a.close().await;
    b.close().await;
    r
}

async fn case_counter(e: &Env) -> Res {
    let c = connect(&format!("{}-counter", e.prefix), &e.url).await?;
    let r = edit_counter(
        &c,
        &e.lock_name,
        &e.key,
        e.n,
        Duration::from_millis(e.lease_ms),
    )
    .await;
    c.close().await;
    r
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut case = String::new();
    let mut e = Env {
        url: String::new(),
        direct: String::new(),
        prefix: format!("rs-{}", std::process::id()),
        n: 20,
        lock_name: String::new(),
        key: String::new(),
        lease_ms: 5000,
    };
    let names = [
        "counter",
        "del-vdel",
        "fencing",
        "lease",
        "lease-observe",
        "lock-edit",
        "notify",
        "notify-reconnect",
        "set-conditions",
        "set-expiry",
        "set-get",
        "set-persist",
    ];
    while let Some(flag) = args.next() {
        if flag == "--list" {
            names.iter().for_each(|n| println!("{n}"));
            return;
        }
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--case" => case = value,
            "--url" => e.url = value,
            "--direct" => e.direct = value,
            "--prefix" => e.prefix = value,
            "--n" => e.n = value.parse().unwrap_or(20),
            "--lock" => e.lock_name = value,
            "--key" => e.key = value,
            "--lease-ms" => e.lease_ms = value.parse().unwrap_or(5000),
            other => {
                eprintln!("unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    if e.direct.is_empty() {
        e.direct = e.url.clone();
    }
    let result = match case.as_str() {
        "set-get" => case_set_get(&e).await,
        "set-conditions" => case_set_conditions(&e).await,
        "set-expiry" => case_set_expiry(&e).await,
        "set-persist" => case_set_persist(&e).await,
        "del-vdel" => case_del_vdel(&e).await,
        "fencing" => case_fencing(&e).await,
        "notify" => case_notify(&e).await,
        "notify-reconnect" => case_notify_reconnect(&e).await,
        "lease" => case_lease(&e).await,
        "lease-observe" => case_lease_observe(&e).await,
        "lock-edit" => case_lock_edit(&e).await,
        "counter" => case_counter(&e).await,
        other => {
            eprintln!("usage: interop --case NAME --url URL (unknown case {other:?})");
            std::process::exit(2);
        }
    };
    match result {
        Ok(()) => println!("PASS {case}"),
        Err(why) => {
            println!("FAIL {case}: {why}");
            std::process::exit(1);
        }
    }
}
