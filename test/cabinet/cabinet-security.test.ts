/**
 * The cabinet's accounts and sessions through HTTP, as a browser speaks it: sign-up with the
 * email confirmed by mail (a real SMTP server), log-in, log-out, password change and reset, no
 * answer that tells whether an email has an account, CSRF refused, no session fixation, throttled
 * log-in, and one customer unable to see or change another's numbers, keys, exports or webhook
 * events by any id.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { browserClient, cabinetSettings, type EventStream, mailbox, signedUp } from "../support/Cabinet.js"
import { eventually, uniquePhone } from "../support/Fixtures.js"
import { freshDatabase, startGateway } from "../support/TestGateway.js"

const setup = Effect.gen(function*() {
  const box = yield* mailbox
  const gateway = yield* startGateway(yield* freshDatabase, { settings: cabinetSettings(box) })
  return { box, gateway, url: gateway.url }
})

const code = (r: { status: number; body: any }) => `${r.status} ${r.body?.code ?? "ok"}`

describe("accounts and sessions", () => {
  it.scopedLive("sign-up, confirmation by mail, log-out, log-in, password change and reset; no answer tells who has an account", () =>
    Effect.gen(function*() {
      const { box, url } = yield* setup
      const owner = yield* signedUp(url, box, "owner@shop.kz")
      const me = yield* owner.get("/me")
      assert.strictEqual(me.status, 200)
      assert.strictEqual(me.body.email, "owner@shop.kz")

      // Sign-up with a taken email answers exactly as a new one; the owner gets a mail instead.
      const stranger = browserClient(url)
      yield* stranger.open("/cabinet/signup")
      const again = yield* stranger.post("/signup", { email: "owner@shop.kz", company: "Other", password: "another password 1" })
      const fresh = yield* stranger.post("/signup", { email: "new@shop.kz", company: "New", password: "another password 1" })
      assert.deepStrictEqual([again.status, again.body], [fresh.status, fresh.body])
      const blank = yield* stranger.post("/signup", { email: "blank@shop.kz", company: "   ", password: "another password 1" })
      assert.strictEqual(code(blank), "400 invalid_param")
      const signUpReset = yield* box.link("owner@shop.kz", "/cabinet/reset/new")

      // A wrong password and an unknown email: the same answer.
      const wrongPassword = yield* stranger.post("/login", { email: "owner@shop.kz", password: "not the password" })
      const unknown = yield* stranger.post("/login", { email: "nobody@shop.kz", password: "not the password" })
      assert.deepStrictEqual([wrongPassword.status, wrongPassword.body], [unknown.status, unknown.body])
      assert.strictEqual(code(unknown), "401 invalid_credentials")
      // Reset asks answer alike too.
      const resetKnown = yield* stranger.post("/reset", { email: "owner@shop.kz" })
      const resetUnknown = yield* stranger.post("/reset", { email: "nobody@shop.kz" })
      assert.deepStrictEqual([resetKnown.status, resetKnown.body], [resetUnknown.status, resetUnknown.body])
      // The owner's mails: the confirmation, the sign-up's reset link and this one.
      const toOwner = Effect.sync(() => box.mails.filter((m) => m.to === "owner@shop.kz").length)
      yield* eventually(toOwner, (n) => n === 3)

      // Log out ends the session on the server: its cookie no longer works.
      const sid = owner.cookies.get("wagate_sid")!
      assert.strictEqual((yield* owner.post("/logout")).status, 200)
      const replay = browserClient(url)
      replay.cookies.set("wagate_sid", sid)
      assert.strictEqual(code(yield* replay.get("/me")), "401 not_signed_in")

      // Log in on two devices; a password change signs the other one out.
      const laptop = browserClient(url)
      yield* laptop.open("/cabinet/login")
      assert.strictEqual((yield* laptop.post("/login", { email: "owner@shop.kz", password: "correct horse battery" })).status, 200)
      const phone = browserClient(url)
      yield* phone.open("/cabinet/login")
      assert.strictEqual((yield* phone.post("/login", { email: "owner@shop.kz", password: "correct horse battery" })).status, 200)
      assert.strictEqual(code(yield* laptop.post("/password", { current: "wrong", password: "a new long password" })), "401 invalid_credentials")
      assert.strictEqual((yield* laptop.post("/password", { current: "correct horse battery", password: "a new long password" })).status, 200)
      assert.strictEqual((yield* laptop.get("/me")).status, 200)
      assert.strictEqual(code(yield* phone.get("/me")), "401 not_signed_in")

      // Reset by mail: the link works once and signs in; the new password works.
      const forgot = browserClient(url)
      yield* forgot.open("/cabinet/reset")
      yield* forgot.post("/reset", { email: "owner@shop.kz" })
      yield* eventually(toOwner, (n) => n === 4)
      const link = yield* box.link("owner@shop.kz", "/cabinet/reset/new")
      const token = new URL(link).searchParams.get("token")!
      // The link the sign-up mailed ended with the password change.
      const early = new URL(signUpReset).searchParams.get("token")!
      assert.strictEqual(code(yield* forgot.post("/reset/confirm", { token: early, password: "third password here" })), "404 not_found")
      assert.strictEqual((yield* forgot.post("/reset/confirm", { token, password: "third password here" })).status, 200)
      assert.strictEqual(code(yield* forgot.post("/reset/confirm", { token, password: "fourth password here" })), "404 not_found")
      assert.strictEqual(code(yield* laptop.get("/me")), "401 not_signed_in")
      const again2 = browserClient(url)
      yield* again2.open("/cabinet/login")
      assert.strictEqual((yield* again2.post("/login", { email: "owner@shop.kz", password: "third password here" })).status, 200)
    }), { timeout: 60_000 })

  it.scopedLive("a one-time link spends the others of its kind; a password change or reset spends every one left", () =>
    Effect.gen(function*() {
      const { box, url } = yield* setup
      const email = "links@shop.kz"
      /** The token of the next mail to `email` with a link to `path`, after `count` mails. */
      const nextToken = (path: string, count: number) =>
        Effect.gen(function*() {
          yield* eventually(Effect.sync(() => box.mails.length), (n) => n > count)
          return new URL(yield* box.link(email, path)).searchParams.get("token")!
        })
      const client = browserClient(url)
      yield* client.open("/cabinet/signup")
      let mails = box.mails.length
      assert.strictEqual((yield* client.post("/signup", { email, company: "Links", password: "correct horse battery" })).status, 202)
      const firstConfirm = yield* nextToken("/cabinet/confirm", mails)
      // Logging in before confirming mails the link again: two confirmation links.
      mails = box.mails.length
      yield* client.open("/cabinet/login")
      assert.strictEqual(code(yield* client.post("/login", { email, password: "correct horse battery" })), "400 invalid_param")
      const secondConfirm = yield* nextToken("/cabinet/confirm", mails)
      assert.notStrictEqual(firstConfirm, secondConfirm)
      assert.strictEqual((yield* client.post("/confirm", { token: secondConfirm })).status, 200)
      const late = browserClient(url)
      yield* late.open("/cabinet/confirm")
      assert.strictEqual(code(yield* late.post("/confirm", { token: firstConfirm })), "404 not_found")

      // Two reset links: using the newer one spends the older.
      const forgot = browserClient(url)
      yield* forgot.open("/cabinet/reset")
      mails = box.mails.length
      yield* forgot.post("/reset", { email })
      const olderReset = yield* nextToken("/cabinet/reset/new", mails)
      mails = box.mails.length
      yield* forgot.post("/reset", { email })
      const newerReset = yield* nextToken("/cabinet/reset/new", mails)
      assert.strictEqual((yield* forgot.post("/reset/confirm", { token: newerReset, password: "second password here" })).status, 200)
      assert.strictEqual(code(yield* forgot.post("/reset/confirm", { token: olderReset, password: "someone else's one" })), "404 not_found")
      assert.strictEqual((yield* forgot.get("/me")).status, 200)

      // A reset link mailed before a password change no longer works after it.
      const asker = browserClient(url)
      yield* asker.open("/cabinet/reset")
      mails = box.mails.length
      yield* asker.post("/reset", { email })
      const beforeChange = yield* nextToken("/cabinet/reset/new", mails)
      assert.strictEqual((yield* forgot.post("/password", { current: "second password here", password: "third password here" })).status, 200)
      const stale = browserClient(url)
      yield* stale.open("/cabinet/reset/new")
      assert.strictEqual(code(yield* stale.post("/reset/confirm", { token: beforeChange, password: "someone else's one" })), "404 not_found")
      assert.strictEqual((yield* forgot.get("/me")).status, 200)
    }), { timeout: 60_000 })

  it.scopedLive("an open event stream ends with its session: log-out, a password change elsewhere, a reset", () =>
    Effect.gen(function*() {
      const { box, url } = yield* setup
      const owner = yield* signedUp(url, box, "live@shop.kz")
      yield* owner.post("/balance/top-up", { amount: 9900 })
      const added = yield* owner.post("/numbers", { phone: uniquePhone(), method: "qr" })
      assert.strictEqual(added.status, 201)
      const numberId = added.body.number.id
      const sent = (...streams: ReadonlyArray<EventStream>) => Effect.sync(() => streams.map((s) => s.text).join(""))
      const ended = (...streams: ReadonlyArray<EventStream>) =>
        eventually(Effect.sync(() => streams.map((s) => s.ended)), (e) => e.every((x) => x), 15_000)

      const list = yield* owner.events("/numbers/events")
      const link = yield* owner.events(`/numbers/${numberId}/events`)
      assert.deepStrictEqual([list.status, link.status], [200, 200])
      yield* eventually(sent(list, link), (t) => t.includes("event: numbers") && t.includes("event: link"))
      assert.strictEqual((yield* owner.post("/logout")).status, 200)
      yield* ended(list, link)

      const logIn = Effect.gen(function*() {
        const client = browserClient(url)
        yield* client.open("/cabinet/login")
        assert.strictEqual((yield* client.post("/login", { email: "live@shop.kz", password: "correct horse battery" })).status, 200)
        return client
      })
      // A password change on the laptop ends the phone's streams.
      const laptop = yield* logIn
      const phone = yield* logIn
      const onPhone = yield* phone.events("/numbers/events")
      const onLaptop = yield* laptop.events("/numbers/events")
      yield* eventually(sent(onPhone), (t) => t.includes("event: numbers"))
      assert.strictEqual((yield* laptop.post("/password", { current: "correct horse battery", password: "a new long password" })).status, 200)
      yield* ended(onPhone)
      // The laptop's session goes on under a new id, with a new stream.
      const again = yield* laptop.events(`/numbers/${numberId}/events`)
      yield* eventually(sent(again), (t) => t.includes("event: link"))
      yield* ended(onLaptop)

      // A reset by mail ends every session, and so every stream.
      const forgot = browserClient(url)
      yield* forgot.open("/cabinet/reset")
      const before = box.mails.length
      yield* forgot.post("/reset", { email: "live@shop.kz" })
      yield* eventually(Effect.sync(() => box.mails.length), (n) => n > before)
      const token = new URL(yield* box.link("live@shop.kz", "/cabinet/reset/new")).searchParams.get("token")!
      assert.isFalse(again.ended)
      assert.strictEqual((yield* forgot.post("/reset/confirm", { token, password: "third password here" })).status, 200)
      yield* ended(again)
    }), { timeout: 90_000 })

  it.scopedLive("no answer of the cabinet API is stored by a cache: the account's data and the CSRF token", () =>
    Effect.gen(function*() {
      const { box, url } = yield* setup
      const owner = yield* signedUp(url, box, "nocache@shop.kz")
      const stranger = browserClient(url)
      yield* stranger.open("/cabinet/login")
      const answers = {
        me: yield* owner.get("/me"),
        numbers: yield* owner.get("/numbers"),
        refused: yield* stranger.get("/me"),
        logIn: yield* stranger.post("/login", { email: "nocache@shop.kz", password: "correct horse battery" })
      }
      assert.deepStrictEqual(
        Object.fromEntries(Object.entries(answers).map(([k, r]) => [k, `${r.status} ${r.headers.get("cache-control")}`])),
        { me: "200 no-store", numbers: "200 no-store", refused: "401 no-store", logIn: "200 no-store" }
      )
    }))

  it.scopedLive("the operator issues a reset link for an account it made; without SMTP the link goes to the log", () =>
    Effect.gen(function*() {
      const { url, gateway } = yield* setup
      const account = yield* gateway.ops.ops.createAccount({ payload: { email: "made@shop.kz", company: "Made" } })
      const { url: link } = yield* gateway.ops.ops.cabinetResetLink({ path: { id: account.id } })
      const client = browserClient(url)
      yield* client.open("/cabinet/reset/new")
      const token = new URL(link).searchParams.get("token")!
      assert.strictEqual((yield* client.post("/reset/confirm", { token, password: "owner's own password" })).status, 200)
      assert.strictEqual((yield* client.get("/me")).body.email, "made@shop.kz")
    }))
})

describe("attacks", () => {
  it.scopedLive("CSRF: a state change without the token, with another token or from another site is refused", () =>
    Effect.gen(function*() {
      const { box, url } = yield* setup
      const owner = yield* signedUp(url, box, "csrf@shop.kz")
      const token = owner.csrf
      owner.csrf = ""
      assert.strictEqual(code(yield* owner.post("/keys", {})), "403 csrf_rejected")
      owner.csrf = "x".repeat(43)
      assert.strictEqual(code(yield* owner.post("/keys", {})), "403 csrf_rejected")
      owner.csrf = token
      assert.strictEqual(code(yield* owner.post("/keys", {}, { origin: "https://evil.example" })), "403 csrf_rejected")
      assert.strictEqual((yield* owner.post("/keys", {})).status, 201)
      // Before signing in: the log-in form's token must match its cookie.
      const visitor = browserClient(url)
      assert.strictEqual(code(yield* visitor.post("/login", { email: "csrf@shop.kz", password: "correct horse battery" })), "403 csrf_rejected")
      yield* visitor.open("/cabinet/login")
      assert.strictEqual((yield* visitor.post("/login", { email: "csrf@shop.kz", password: "correct horse battery" })).status, 200)
    }))

  it.scopedLive("session fixation: an id planted before log-in never becomes a session; log-in issues a new one", () =>
    Effect.gen(function*() {
      const { box, url } = yield* setup
      yield* signedUp(url, box, "fix@shop.kz")
      const planted = "A".repeat(43)
      const victim = browserClient(url)
      victim.cookies.set("wagate_sid", planted)
      yield* victim.open("/cabinet/login")
      assert.strictEqual((yield* victim.post("/login", { email: "fix@shop.kz", password: "correct horse battery" })).status, 200)
      assert.notStrictEqual(victim.cookies.get("wagate_sid"), planted)
      const attacker = browserClient(url)
      attacker.cookies.set("wagate_sid", planted)
      assert.strictEqual(code(yield* attacker.get("/me")), "401 not_signed_in")
      // A session's cookie is HttpOnly and SameSite.
      const login = browserClient(url)
      yield* login.open("/cabinet/login")
      const answer = yield* login.post("/login", { email: "fix@shop.kz", password: "correct horse battery" })
      const cookie = answer.headers.getSetCookie().find((c) => c.startsWith("wagate_sid="))!
      assert.match(cookie, /HttpOnly/)
      assert.match(cookie, /SameSite=Strict/)
    }))

  it.scopedLive("behind HTTPS (a trusted proxy says so) the cookies are Secure; over plain HTTP they are not", () =>
    Effect.gen(function*() {
      const box = yield* mailbox
      const gateway = yield* startGateway(yield* freshDatabase, { settings: { ...cabinetSettings(box), trustProxy: true } })
      yield* signedUp(gateway.url, box, "tls@shop.kz")
      const cookiesOf = (proto: string) =>
        Effect.gen(function*() {
          const client = browserClient(gateway.url)
          yield* client.open("/cabinet/login")
          const answer = yield* client.post("/login", { email: "tls@shop.kz", password: "correct horse battery" }, {
            "x-forwarded-proto": proto
          })
          assert.strictEqual(answer.status, 200)
          return answer.headers.getSetCookie()
        })
      const https = yield* cookiesOf("https")
      assert.strictEqual(https.length, 2)
      for (const cookie of https) assert.match(cookie, /; Secure/)
      for (const cookie of yield* cookiesOf("http")) assert.notMatch(cookie, /; Secure/)
    }))

  it.scopedLive("log-in is throttled per email (known or not alike) with Retry-After", () =>
    Effect.gen(function*() {
      const { box, url } = yield* setup
      yield* signedUp(url, box, "slow@shop.kz")
      const guesser = browserClient(url)
      yield* guesser.open("/cabinet/login")
      const tries = (email: string) =>
        Effect.forEach(Array.from({ length: 11 }), () => guesser.post("/login", { email, password: "guess guess guess" }))
      const known = yield* tries("slow@shop.kz")
      const unknown = yield* tries("ghost@shop.kz")
      assert.deepStrictEqual(known.map(code), unknown.map(code))
      assert.strictEqual(code(known[9]), "401 invalid_credentials")
      assert.strictEqual(code(known[10]), "429 rate_limited")
      assert.ok(Number(known[10].headers.get("retry-after")) > 0)
      // Even the right password waits now.
      assert.strictEqual(code(yield* guesser.post("/login", { email: "slow@shop.kz", password: "correct horse battery" })), "429 rate_limited")
    }))

  it.scopedLive("malformed requests to the cabinet API answer 4xx with {error, code}, never 5xx", () =>
    Effect.gen(function*() {
      const { box, url } = yield* setup
      const owner = yield* signedUp(url, box, "fuzz@shop.kz")
      const raw = (method: string, path: string, body: string, type = "application/json") =>
        Effect.promise(async () => {
          const r = await fetch(`${url}/cabinet/api${path}`, {
            method,
            headers: {
              cookie: [...owner.cookies].map(([k, v]) => `${k}=${v}`).join("; "),
              "x-csrf-token": owner.csrf,
              "content-type": type
            },
            body: method === "GET" ? undefined : body
          })
          return { path, status: r.status, body: (await r.json().catch(() => null)) as Record<string, unknown> | null }
        })
      const answers = [
        yield* raw("POST", "/numbers", "{not json"),
        yield* raw("POST", "/numbers", JSON.stringify({ phone: 77011234567 })),
        yield* raw("POST", "/numbers", JSON.stringify({ phone: "abc", method: "fax" })),
        yield* raw("POST", "/numbers", JSON.stringify({ phone: "\u0000".repeat(40) })),
        yield* raw("POST", "/balance/top-up", JSON.stringify({ amount: "lots" })),
        yield* raw("POST", "/balance/top-up", JSON.stringify({ amount: 1e30 })),
        yield* raw("PUT", "/webhook", JSON.stringify({ url: "not a url" })),
        yield* raw("PUT", "/webhook", JSON.stringify({ url: "x".repeat(5000) })),
        yield* raw("POST", "/webhook/resend", JSON.stringify({ event_id: -1 })),
        yield* raw("POST", "/keys/abc/reissue", "{}"),
        yield* raw("POST", "/keys/99999999999999999999/reissue", "{}"),
        yield* raw("GET", "/numbers/0/link", ""),
        yield* raw("GET", "/messages?number=x&before=-5", ""),
        yield* raw("PUT", "/storage/policy", JSON.stringify({ retention_days: 0, ceiling_bytes: -1 })),
        yield* raw("POST", "/exports", JSON.stringify({ number: "one" })),
        yield* raw("POST", "/password", JSON.stringify({ current: "x", password: "short" })),
        yield* raw("POST", "/login", "email=a&password=b", "application/x-www-form-urlencoded"),
        yield* raw("POST", "/signup", JSON.stringify({ email: "not-an-email", company: "", password: "x" }))
      ].map((r) => ({ ...r, body: r.body === null ? null : Object.keys(r.body).sort().join() }))
      for (const a of answers) {
        assert.ok(a.status >= 400 && a.status < 500, `${a.path}: ${a.status}`)
        assert.strictEqual(a.body, "code,error", a.path)
      }
      // Ids and page parameters are decimal digits, as on the public API.
      assert.strictEqual(code(yield* owner.get("/messages?before=1000")), "200 ok")
      for (const query of ["before=0x20", "before=1e3", "before=010", "number=0x1"]) {
        assert.strictEqual(code(yield* owner.get(`/messages?${query}`)), "400 invalid_param", query)
      }
    }))

  it.scopedLive("a refused password or link token is never echoed: the answer says the rule", () =>
    Effect.gen(function*() {
      const { box, url } = yield* setup
      const owner = yield* signedUp(url, box, "rules@shop.kz")
      const stranger = browserClient(url)
      yield* stranger.open("/cabinet/signup")
      const long = "p".repeat(201)
      const answers = {
        signupShort: yield* stranger.post("/signup", { email: "new@shop.kz", company: "New", password: "short" }),
        signupLong: yield* stranger.post("/signup", { email: "new@shop.kz", company: "New", password: long }),
        signupNotText: yield* stranger.post("/signup", { email: "new@shop.kz", company: "New", password: 12345678901 }),
        loginLong: yield* stranger.post("/login", { email: "rules@shop.kz", password: long }),
        resetShort: yield* stranger.post("/reset/confirm", { token: "a-token-of-some-length", password: "short" }),
        resetToken: yield* stranger.post("/reset/confirm", { token: "tok", password: "a long enough password" }),
        confirmToken: yield* stranger.post("/confirm", { token: "t".repeat(300) }),
        changeCurrent: yield* owner.post("/password", { current: long, password: "a new long password" }),
        changeShort: yield* owner.post("/password", { current: "correct horse battery", password: "short" })
      }
      for (const [what, answer] of Object.entries(answers)) {
        assert.strictEqual(code(answer), "400 invalid_param", what)
        for (const secret of ["short", "ppppp", "12345678901", "tok\"", "ttttt", "correct horse"]) {
          assert.notInclude(answer.body.error, secret, what)
        }
      }
      assert.strictEqual(answers.signupShort.body.error, "password: at least 10 characters")
      assert.strictEqual(answers.signupLong.body.error, "password: at most 200 characters")
      assert.strictEqual(answers.loginLong.body.error, "password: at most 200 characters")
      assert.strictEqual(answers.changeShort.body.error, "password: at least 10 characters")
      assert.strictEqual(answers.resetToken.body.error, "token: not a valid link")
      // The other refusals of the cabinet's forms say their rule in the page's terms too.
      assert.strictEqual((yield* owner.post("/balance/top-up", { amount: 20_000_000 })).body.error,
        "amount: a whole number of KZT from 100 to 10000000")
      assert.strictEqual((yield* owner.put("/webhook", { url: `https://shop.kz/${"x".repeat(2048)}` })).body.error,
        "url: at most 2048 characters")
    }))

  it.scopedLive("one customer cannot see or change another's numbers, keys, exports or webhook events by any id", () =>
    Effect.gen(function*() {
      const { box, url, gateway } = yield* setup
      const alice = yield* signedUp(url, box, "alice@shop.kz")
      const bob = yield* signedUp(url, box, "bob@shop.kz")
      yield* alice.post("/balance/top-up", { amount: 9900 })
      const added = yield* alice.post("/numbers", { phone: uniquePhone(), method: "qr" })
      assert.strictEqual(added.status, 201)
      const numberId = added.body.number.id
      const key = yield* alice.post("/keys", { number_id: numberId })
      assert.strictEqual(key.status, 201)
      assert.strictEqual((yield* alice.put("/webhook", { url: "http://127.0.0.1:9/hook" })).status, 200)
      assert.strictEqual((yield* alice.post("/webhook/test")).status, 202)
      const aliceWebhook = yield* eventually(alice.get("/webhook"), (r) => r.body.deliveries.length > 0)
      const eventId = aliceWebhook.body.deliveries[0].event_id
      // A body whose fields may all be left out may be null (or empty) too.
      const exported = yield* alice.post("/exports", null)
      assert.strictEqual(exported.status, 202)
      assert.strictEqual((yield* alice.post("/keys", null)).status, 201)
      assert.strictEqual((yield* alice.post(`/numbers/${numberId}/link`, null)).status, 200)

      const refused = [
        yield* bob.get(`/numbers/${numberId}/link`),
        yield* bob.post(`/numbers/${numberId}/link`, { method: "code" }),
        yield* bob.post(`/numbers/${numberId}/unlink`),
        yield* bob.get(`/numbers/${numberId}/events`),
        yield* bob.get(`/numbers/${numberId}/limits`),
        yield* bob.get(`/messages?number=${numberId}`),
        yield* bob.post("/keys", { number_id: numberId }),
        yield* bob.post(`/keys/${key.body.id}/reissue`),
        yield* bob.get(`/exports/${exported.body.id}`),
        yield* bob.post("/exports", { number: numberId })
      ]
      assert.deepStrictEqual(refused.map((r) => r.status), refused.map(() => 404))
      // Bob's lists hold nothing of Alice's; his resend of her event resends nothing.
      assert.deepStrictEqual((yield* bob.get("/numbers")).body.numbers, [])
      assert.deepStrictEqual((yield* bob.get("/keys")).body.keys, [])
      assert.deepStrictEqual((yield* bob.get("/exports")).body.exports, [])
      assert.deepStrictEqual((yield* bob.get("/messages")).body.messages, [])
      const resend = yield* bob.post("/webhook/resend", { event_id: eventId })
      assert.ok(resend.status === 404 || resend.body.queued === 0, JSON.stringify(resend.body))
      assert.strictEqual((yield* bob.get("/webhook")).body.webhook, null)
      // Alice's key still works: Bob's re-issue did nothing.
      const api = yield* gateway.http.get("/api/v1/numbers", { headers: { authorization: `Bearer ${key.body.key}` } })
      assert.strictEqual(api.status, 200)
    }), { timeout: 60_000 })
})
