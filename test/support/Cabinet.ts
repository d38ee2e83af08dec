/**
 * What the cabinet tests share: a real SMTP server on loopback that keeps the mail the gateway
 * sends (the cabinet's SMTP_URL points at it), a browser-like HTTP client that keeps cookies
 * and sends the page's CSRF token, for the tests that speak HTTP without a browser, and the
 * headless Chromium the browser tests drive.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { existsSync } from "node:fs"
import { chromium } from "playwright-core"
import { SMTPServer } from "smtp-server"

/** Debian's Chromium (`CHROMIUM_PATH` names another); `.ci/run` installs it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
export const hasChromium = existsSync(CHROMIUM)
export const launchChromium = () =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-extensions"]
  })

export interface Mail {
  readonly to: string
  readonly raw: string
}

export interface Mailbox {
  readonly url: Redacted.Redacted
  readonly mails: Array<Mail>
  /** The first link to the cabinet in the newest mail to `to` matching `path`, polled for until it arrives. */
  readonly link: (to: string, path: string) => Effect.Effect<string>
}

/** Quoted-printable soft line breaks and escapes, as mail bodies arrive. */
const decode = (raw: string) =>
  raw.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)))

export const mailbox: Effect.Effect<Mailbox, never, import("effect/Scope").Scope> = Effect.acquireRelease(
  Effect.async<{ server: SMTPServer; port: number; mails: Array<Mail> }>((resume) => {
    const mails: Array<Mail> = []
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["AUTH", "STARTTLS"],
      logger: false,
      onData(stream, session, callback) {
        let raw = ""
        stream.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")))
        stream.on("end", () => {
          for (const to of session.envelope.rcptTo) mails.push({ to: to.address, raw: decode(raw) })
          callback()
        })
      }
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, port: (server.server.address() as any).port, mails })))
  }),
  ({ server }) => Effect.async<void>((resume) => server.close(() => resume(Effect.void)))
).pipe(Effect.map(({ mails, port }) => ({
  url: Redacted.make(`smtp://127.0.0.1:${port}`),
  mails,
  link: (to: string, path: string) =>
    Effect.gen(function*() {
      for (let i = 0; i < 200; i++) {
        const mine = mails.filter((m) => m.to.toLowerCase() === to.toLowerCase())
        for (const mail of mine.reverse()) {
          const found = mail.raw.match(new RegExp(`https?://[^\\s]+${path.replace(/\//g, "\\/")}\\?token=[A-Za-z0-9_-]+`))
          if (found) return found[0]
        }
        yield* Effect.sleep("50 millis")
      }
      return yield* Effect.dieMessage(`no mail to ${to} with a link to ${path}`)
    })
})))

/** Settings of a gateway whose cabinet mail goes to `box`, with the test payment provider on. */
export const cabinetSettings = (box: Mailbox) => ({
  smtpUrl: Option.some(box.url),
  paymentsTestSecret: Option.some(Redacted.make("test-payments-secret")),
  webhookAllowPrivateUrls: true
})

export interface Response {
  readonly status: number
  readonly body: any
  readonly headers: Headers
}

/** An open event stream: what it has sent so far, and whether it has ended. */
export interface EventStream {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly ended: boolean
  readonly close: () => void
}

/** A browser without a page: a cookie jar, the CSRF token, and JSON calls to the cabinet API. */
export const browserClient = (base: string) => {
  const cookies = new Map<string, string>()
  let csrf = ""
  const keep = (headers: Headers) => {
    for (const line of headers.getSetCookie()) {
      const [pair] = line.split(";")
      const [name, ...value] = pair.split("=")
      const v = value.join("=")
      if (/max-age=0/i.test(line) || v === "") cookies.delete(name)
      else cookies.set(name, v)
    }
  }
  const cookieHeader = () => [...cookies].map(([k, v]) => `${k}=${v}`).join("; ")
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    Effect.promise(async (): Promise<Response> => {
      const response = await fetch(`${base}${path}`, {
        method,
        redirect: "manual",
        headers: {
          cookie: cookieHeader(),
          ...(csrf ? { "x-csrf-token": csrf } : {}),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...headers
        },
        body: body === undefined ? undefined : JSON.stringify(body)
      })
      keep(response.headers)
      const text = await response.text()
      let parsed: any = text
      try {
        parsed = JSON.parse(text)
      } catch {
        // a page, not JSON
      }
      if (parsed && typeof parsed === "object" && typeof parsed.csrf === "string") csrf = parsed.csrf
      return { status: response.status, body: parsed, headers: response.headers }
    })
  return {
    cookies,
    get csrf() {
      return csrf
    },
    set csrf(value: string) {
      csrf = value
    },
    /** Opens a page, as a browser would, taking the CSRF token it carries. */
    open: (path: string) =>
      Effect.map(call("GET", path), (r) => {
        const token = String(r.body).match(/name="csrf-token" content="([^"]+)"/)
        if (token) csrf = token[1]
        return r
      }),
    get: (path: string) => call("GET", `/cabinet/api${path}`),
    /** Opens an event stream of the cabinet API as EventSource would; closed with the scope. */
    events: (path: string) =>
      Effect.acquireRelease(
        Effect.promise(async (): Promise<EventStream> => {
          const abort = new AbortController()
          const response = await fetch(`${base}/cabinet/api${path}`, {
            headers: { cookie: cookieHeader(), accept: "text/event-stream" },
            signal: abort.signal
          })
          const stream = { status: response.status, headers: response.headers, text: "", ended: false, close: () => abort.abort() }
          const reader = response.body!.getReader()
          const decoder = new TextDecoder()
          void (async () => {
            try {
              for (let r = await reader.read(); !r.done; r = await reader.read()) stream.text += decoder.decode(r.value, { stream: true })
            } catch {
              // aborted by the test, or the connection broke: ended either way
            }
            stream.ended = true
          })()
          return stream
        }),
        (stream) => Effect.sync(stream.close)
      ),
    /** Posts `body` as JSON (`{}` when left out; `null` is sent as the JSON `null`). */
    post: (path: string, body?: unknown, headers?: Record<string, string>) =>
      call("POST", `/cabinet/api${path}`, body === undefined ? {} : body, headers),
    put: (path: string, body: unknown) => call("PUT", `/cabinet/api${path}`, body)
  }
}
export type BrowserClient = ReturnType<typeof browserClient>

/** Signs up `email` through the API, confirms it from the mail, and returns the signed-in client. */
export const signedUp = (base: string, box: Mailbox, email: string, password = "correct horse battery") =>
  Effect.gen(function*() {
    const client = browserClient(base)
    yield* client.open("/cabinet/signup")
    const signUp = yield* client.post("/signup", { email, company: `Shop of ${email}`, password })
    if (signUp.status !== 202) return yield* Effect.dieMessage(`sign-up answered ${signUp.status}: ${JSON.stringify(signUp.body)}`)
    const link = yield* box.link(email, "/cabinet/confirm")
    const token = new URL(link).searchParams.get("token")!
    const confirmed = yield* client.post("/confirm", { token })
    if (confirmed.status !== 200) return yield* Effect.dieMessage(`confirm answered ${confirmed.status}`)
    return client
  })
