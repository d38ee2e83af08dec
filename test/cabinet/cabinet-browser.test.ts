/**
 * A new customer in a real browser (Debian's Chromium, headless, driven by playwright-core) on a
 * gateway with the simulated network: signs up (email confirmed from the mail), is refused a
 * number until paying, tops up with the test provider, links one number by QR on a phone-sized
 * screen (the QR replaced live) and one by pairing code, issues a key, sends with it through the
 * API and finds the message in the cabinet, re-issues it and sees the old one refused, sets the
 * webhook and receives the test event, and every page passes axe-core with no serious or critical
 * violation. One browser for the file, one page reused.
 */
import { afterAll, assert, beforeAll, beforeEach, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import type { Browser, Page } from "playwright-core"
import { cabinetSettings, hasChromium, launchChromium, type Mailbox, mailbox } from "../support/Cabinet.js"
import { eventually, uniquePhone } from "../support/Fixtures.js"
import { freshDatabase, type RunningGateway, sql, startGateway } from "../support/TestGateway.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"

// Functions run in the page see the browser's globals; the tests are typed without the DOM's types.
declare const document: any
declare const window: any

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

interface World {
  readonly gateway: RunningGateway
  readonly box: Mailbox
  readonly receiver: WebhookReceiver.Receiver
}

const scope = Effect.runSync(Scope.make())
let world: World
let browser: Browser
let page: Page

const run = <A>(effect: Effect.Effect<A, unknown, never>) => Effect.runPromise(effect)

const EMAIL = "aigerim@shop.kz"
const PASSWORD = "qurt and baursak 2026"
const qrPhone = uniquePhone()
const codePhone = uniquePhone()

/** Runs axe-core on the page as it is and fails on any serious or critical violation. */
const accessible = async (what: string) => {
  await page.evaluate(axeSource)
  const result: any = await page.evaluate(
    `axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } })`
  )
  const bad = result.violations.filter((v: any) => v.impact === "serious" || v.impact === "critical")
  assert.deepStrictEqual(
    bad.map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(" ")).join(", ")}`),
    [],
    `${what}: accessibility violations`
  )
}

/** Opens a cabinet page and waits until its script has filled it. */
const open = async (path: string) => {
  await page.goto(`${world.gateway.url}/cabinet${path}`)
  await page.waitForFunction(() => !/^(Loading…|Загрузка…)$/.test(document.querySelector("#app").textContent))
}

const api = (method: string, path: string, key: string, body?: unknown) =>
  fetch(`${world.gateway.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body)
  }).then(async (r) => ({ status: r.status, body: await r.json() as any }))

describe.skipIf(!hasChromium)("the cabinet in a browser", () => {
  beforeAll(async () => {
    world = await run(Scope.extend(
      Effect.gen(function*() {
        const box = yield* mailbox
        const receiver = yield* WebhookReceiver.start
        // The phone scans when the test says so; QRs are replaced every 2 s to see it happen.
        const sim = yield* Layer.build(SimulatorDriver.layerTest({ autoScan: false, qrRefreshMs: 2_000 }))
        const gateway = yield* startGateway(yield* freshDatabase, { settings: cabinetSettings(box), sim })
        return { gateway, box, receiver }
      }).pipe(Effect.orDie),
      scope
    ))
    browser = await launchChromium()
    const context = await browser.newContext({ locale: "en-GB" })
    page = await context.newPage()
    page.on("dialog", (dialog) => dialog.accept())
  }, 120_000)

  // A step that waited in vain says where the page was and what it showed.
  beforeEach(({ onTestFailed }) =>
    onTestFailed(async () => {
      const shown = await page.locator("#app").innerText({ timeout: 5_000 }).catch((e) => `(unreadable: ${e})`)
      console.log(`[cabinet] failed on ${page.url()}, the page showing:\n${shown}`)
    })
  )

  afterAll(async () => {
    await browser?.close()
    await run(Scope.close(scope, Exit.void))
  }, 60_000)

  it("signs up and confirms the email from the mail", async () => {
    await open("/signup")
    await accessible("sign-up page")
    await page.getByLabel("Email").fill(EMAIL)
    await page.getByLabel("Company or shop name").fill("Aigerim's shop")
    await page.getByLabel("New password").fill(PASSWORD)
    await page.getByRole("button", { name: "Create account" }).click()
    await page.getByText("Check your mailbox").waitFor()
    // The mail's link starts with PUBLIC_URL, which the test gateway (on a free port) has not set.
    const link = new URL(await run(world.box.link(EMAIL, "/cabinet/confirm")))
    await page.goto(`${world.gateway.url}${link.pathname}${link.search}`)
    await page.waitForURL(/\/cabinet\/balance$/)
    await page.getByText("Charged per day").waitFor()
    await accessible("balance page")
    for (const path of ["/login", "/reset", "/reset/new?token=none", "/confirm?token=spent-or-wrong-token"]) {
      await open(path)
      await accessible(path)
    }
  })

  it("refuses a number until the balance covers it, then tops up with the test provider", async () => {
    await open("/numbers")
    await page.getByLabel("Phone number with country code").fill(qrPhone)
    await page.getByRole("button", { name: "Add a number" }).click()
    const refusal = page.getByRole("alert")
    await refusal.getByText("Payment comes first").waitFor()
    await refusal.getByRole("link", { name: "Top up the balance" }).click()
    await page.waitForURL(/\/cabinet\/balance$/)
    await page.getByLabel("Amount, KZT").fill("9900")
    await page.getByRole("button", { name: "Top up" }).click()
    await page.getByText("Paid: 9,900 KZT").waitFor()
    await page.getByText("9,900 ₸").first().waitFor()
    await page.getByRole("cell", { name: /^Payment/ }).waitFor()
  })

  it("links a number by QR on a phone-sized screen: the QR is replaced live, the scan shows as working", async () => {
    await page.setViewportSize({ width: 375, height: 740 })
    await open("/numbers")
    await page.getByLabel("Phone number with country code").fill(qrPhone)
    await page.getByRole("button", { name: "Add a number" }).click()
    await page.waitForURL(/\/cabinet\/link\?number=\d+/)
    const qr = page.getByRole("img", { name: "QR code to scan with WhatsApp" })
    await qr.waitFor()
    const first = await qr.getAttribute("src")
    assert.match(first!, /^data:image\/png;base64,/)
    await accessible("link page (QR, phone screen)")
    // Nothing sticks out sideways on the phone's screen, and the QR fits on it.
    assert.isAtMost(await page.evaluate<number>("document.documentElement.scrollWidth"), 375)
    const box = await qr.boundingBox()
    assert.isAtMost(box!.x + box!.width, 375)
    // WhatsApp replaces the QR: the page shows the new one without being reloaded.
    await page.waitForFunction((src) => document.querySelector("img.qr")?.getAttribute("src") !== src, first, { timeout: 15_000 })
    // The number's link moves to another runner (or the gateway restarts) and goes on in a new
    // session: its status is still SCAN_QR_CODE, with no QR until WhatsApp gives the new session
    // one. The simulator gives it at once, so the stream is answered here with that moment: the
    // old QR goes, the status line (a live region) says a new one is coming, and the keyboard
    // that was on the QR's button stays in the page, on that line.
    const linkPage = new URL(page.url())
    const moving = {
      number_id: Number(linkPage.searchParams.get("number")),
      status: "SCAN_QR_CODE",
      qr: null,
      qr_image: null,
      pairing_code: null,
      reason: null
    }
    let moved = () => {}
    const moves = new Promise<void>((resolve) => (moved = resolve))
    await page.route("**/cabinet/api/numbers/*/events", async (route) => {
      await moves
      await route.fulfill({ status: 200, contentType: "text/event-stream", body: `retry: 500\nevent: link\ndata: ${JSON.stringify(moving)}\n\n` })
    })
    await open(linkPage.pathname.replace("/cabinet", "") + linkPage.search)
    await qr.waitFor()
    await page.getByRole("button", { name: "Use a code instead" }).focus()
    moved()
    await page.getByRole("status").getByText("Waiting for a new code…").waitFor({ timeout: 15_000 })
    assert.strictEqual(await page.locator("img.qr").count(), 0)
    assert.strictEqual(await page.evaluate(() => document.activeElement.textContent), "Waiting for a new code…")
    await accessible("link page (waiting for a new QR)")
    // The new session's QR arrives: it is shown, and takes the keyboard.
    await page.unroute("**/cabinet/api/numbers/*/events")
    await qr.waitFor({ timeout: 15_000 })
    assert.strictEqual(await page.evaluate(() => document.activeElement.localName), "img")
    await run(world.gateway.sim.scan(qrPhone).pipe(Effect.orDie))
    await page.getByText("Linked. The number works").waitFor({ timeout: 15_000 })
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  it("links a second number by its 8-character pairing code; the numbers page shows a logout live", async () => {
    await open("/numbers")
    await page.getByLabel("Phone number with country code").fill(codePhone)
    await page.getByText("Enter an 8-character code on the phone").click()
    await page.getByRole("button", { name: "Add a number" }).click()
    await page.waitForURL(/\/cabinet\/link\?number=\d+/)
    const code = await page.locator(".code").textContent({ timeout: 15_000 })
    assert.match(code!, /^[A-Z0-9]{4}-?[A-Z0-9]{4}$/)
    await accessible("link page (code)")
    await run(world.gateway.sim.pair(codePhone, code!).pipe(Effect.orDie))
    await page.getByText("Linked. The number works").waitFor({ timeout: 15_000 })
    await open("/numbers")
    assert.strictEqual(await page.getByRole("cell", { name: "Working" }).count(), 2)
    await accessible("numbers page")
    // The phone logs the device out: the open page shows it with the reason, by itself.
    await run(world.gateway.sim.disconnect(codePhone, "logged_out").pipe(Effect.orDie))
    await page.getByRole("cell", { name: /^Stopped — logged out/ }).waitFor({ timeout: 15_000 })
  })

  let oldKey = ""
  let newKey = ""
  it("issues a key shown once, sends with it through the API and finds the message in the cabinet", async () => {
    await open("/keys")
    await page.getByRole("button", { name: "Issue a key" }).click()
    oldKey = (await page.locator("#new-key").textContent())!
    assert.match(oldKey, /^wag_acc_[0-9A-Za-z]{32}$/)
    await accessible("keys page with a new key")
    await open("/keys")
    assert.notInclude(await page.content(), oldKey)
    const sent = await api("POST", "/messages/send", oldKey, { from: qrPhone, to: uniquePhone(), text: "Your order 1042 is ready" })
    assert.strictEqual(sent.status, 200, JSON.stringify(sent.body))
    await open("/history")
    await page.getByRole("cell", { name: "Your order 1042 is ready" }).waitFor()
    await accessible("messages page")
    await open("/keys")
    assert.strictEqual(await page.getByRole("cell", { name: "never" }).count(), 0)
  })

  it("re-issues the key: the new one is shown once and the old one is refused at once", async () => {
    await page.getByRole("button", { name: /^Re-issue/ }).click()
    await page.locator("#new-key").waitFor()
    newKey = (await page.locator("#new-key").textContent())!
    assert.notStrictEqual(newKey, oldKey)
    assert.strictEqual((await api("GET", "/numbers", oldKey)).body.code, "invalid_key")
    assert.strictEqual((await api("GET", "/numbers", newKey)).status, 200)
  })

  it("says why a number is paused: by the operator, on the numbers and the limits page", async () => {
    const { numbers } = (await api("GET", "/numbers", newKey)).body
    const { id } = numbers.find((n: any) => n.phone === qrPhone)
    const pause = (paused: boolean) => run(world.gateway.ops.ops.pause({ path: { id }, payload: { paused } }).pipe(Effect.orDie))
    await pause(true)
    await open("/numbers")
    await page.getByRole("row").filter({ hasText: qrPhone }).getByText("Paused by the operator. Ask your provider to resume it.").waitFor()
    assert.strictEqual(await page.getByText("Paused: the balance ran out").count(), 0)
    await open(`/limits?number=${id}`)
    await page.getByText("The number is paused by the operator.").waitFor()
    await pause(false)
    await open(`/limits?number=${id}`)
    await page.getByText("Trust index").waitFor()
    assert.strictEqual(await page.getByText(/paused/i).count(), 0)
  })

  it("sets the webhook: the secret is shown once, the test event arrives, the log resends it, the secret rotates", async () => {
    await open("/webhook")
    await accessible("webhook page, empty")
    await page.getByLabel("Webhook URL").fill(world.receiver.url("/hook"))
    await page.getByRole("button", { name: "Save" }).click()
    const secret = await page.locator("#webhook-secret").textContent()
    assert.match(secret!, /^whsec_/)
    await page.getByRole("button", { name: "Send a test event" }).click()
    // Acks of the message sent earlier may arrive too; the test event is among them.
    const tests = () => world.receiver.received("/hook").filter((r) => r.json.event === "webhook.test")
    for (let i = 0; i < 200 && tests().length === 0; i++) await new Promise((r) => setTimeout(r, 50))
    const [event] = tests()
    assert.ok(event, "the test event arrived")
    assert.match(event.headers["webhook-signature"], /^v1,/)
    await open("/webhook")
    assert.notInclude(await page.content(), secret!)
    const row = page.getByRole("row").filter({ hasText: "webhook.test" })
    await row.getByRole("cell", { name: /^delivered/ }).waitFor()
    await accessible("webhook page with deliveries")
    await row.getByRole("button", { name: /^Resend/ }).click()
    for (let i = 0; i < 200 && tests().length < 2; i++) await new Promise((r) => setTimeout(r, 50))
    assert.strictEqual(tests().length, 2)
    assert.strictEqual(tests()[1].headers["webhook-id"], event.headers["webhook-id"])
    // Rotation: a new secret, shown once, and the old one still signs for the grace period.
    await page.getByRole("button", { name: "New secret" }).click()
    const rotated = await page.locator("#webhook-secret").textContent()
    assert.match(rotated!, /^whsec_/)
    assert.notStrictEqual(rotated, secret)
    await page.getByText("The previous secret also signs requests until").waitFor()
  })

  it("keeps the keyboard's place, says when it could not copy, and keeps what the operator set", async () => {
    const focused = () => page.evaluate(() => document.activeElement.id || document.activeElement.tagName)
    // A new key takes the focus; without a clipboard the page says so and selects the key instead.
    await open("/keys")
    await page.getByRole("button", { name: "Issue a key" }).focus()
    await page.keyboard.press("Enter")
    await page.locator("#new-key").waitFor()
    assert.strictEqual(await focused(), "new-key")
    const key = await page.locator("#new-key").textContent()
    await page.evaluate(() => Object.defineProperty(window.navigator, "clipboard", { value: undefined }))
    await page.getByRole("button", { name: "Copy" }).click()
    await page.getByRole("button", { name: "Not copied: the text is selected, copy it by hand" }).waitFor()
    assert.strictEqual(await page.evaluate(() => window.getSelection().toString()), key)
    // A refused form keeps the focus on its button.
    await open("/account")
    assert.deepStrictEqual(
      await page.locator("input[type=password]").evaluateAll((inputs) => inputs.map((i: any) => i.maxLength)),
      [200, 200]
    )
    await page.getByLabel("Current password").fill("not the password")
    await page.getByLabel(/^New password/).fill("another long password")
    await page.getByRole("button", { name: "Save" }).focus()
    await page.keyboard.press("Enter")
    await page.getByRole("alert").waitFor()
    assert.strictEqual(await focused(), "BUTTON")
    // Switching QR and code keeps the focus on the page's new content.
    const { numbers } = await page.evaluate(() => window.fetch("/cabinet/api/numbers").then((r: any) => r.json()))
    const stopped = numbers.find((n: any) => n.phone === codePhone)
    await open(`/link?number=${stopped.id}`)
    await page.getByRole("button", { name: "Scan a QR code" }).focus()
    await page.keyboard.press("Enter")
    await page.getByRole("img", { name: "QR code to scan with WhatsApp" }).waitFor({ timeout: 15_000 })
    assert.strictEqual(await page.evaluate(() => document.activeElement.className), "qr")
    // WhatsApp's next QR replaces the image's picture, not the image: the focus stays on it.
    const firstQr = await page.locator("img.qr").getAttribute("src")
    await page.waitForFunction((src) => document.querySelector("img.qr").getAttribute("src") !== src, firstQr, { timeout: 15_000 })
    assert.strictEqual(await page.evaluate(() => document.activeElement.className), "qr")
    await page.getByRole("button", { name: "Use a code instead" }).focus()
    await page.keyboard.press("Enter")
    await page.locator(".code").waitFor({ timeout: 15_000 })
    assert.strictEqual(await page.evaluate(() => document.activeElement.className), "code")
    // A link to no number says so, with the way back.
    for (const query of ["", "?number=abc", "?number=99999999"]) {
      await open(`/link${query}`)
      await page.getByText("No such number in your account.").waitFor()
      await page.getByRole("link", { name: "Back to Numbers" }).waitFor()
    }
    // The test event's button waits for the answer; the keyboard waits on the result, and is back
    // on the button once the page is drawn again (the delivery in its log), the result beside it.
    await open("/webhook")
    const testButton = page.getByRole("button", { name: "Send a test event" })
    await testButton.focus()
    await page.keyboard.press("Enter")
    assert.isTrue(await testButton.isDisabled())
    await page.getByText("The test event is on its way.").waitFor()
    assert.strictEqual(await page.evaluate(() => document.activeElement.textContent), "The test event is on its way.")
    await page.waitForFunction(() =>
      [...document.querySelectorAll("button")].some((b: any) => b.textContent === "Send a test event" && !b.disabled)
    )
    assert.strictEqual(await page.evaluate(() => document.activeElement.textContent), "Send a test event")
    await page.getByText("The test event is on its way.").waitFor()
    // A resent delivery: its result takes the button's place, and the keyboard's.
    await page.getByRole("button", { name: /^Resend/ }).first().focus()
    await page.keyboard.press("Enter")
    await page.getByText("Queued again.").waitFor()
    assert.strictEqual(await page.evaluate(() => document.activeElement.textContent), "Queued again.")
    // Saving with events off says what it means.
    await open("/webhook")
    await page.getByLabel("Send events").uncheck()
    await page.getByRole("button", { name: "Save" }).click()
    await page.getByText("Saved. Events are off: none are sent.").waitFor()
    await page.getByLabel("Send events").check()
    await page.getByRole("button", { name: "Save" }).click()
    await page.getByText("Saved.", { exact: true }).waitFor()
    // The operator's ceiling, not a whole number of GB, is shown as it is and kept by other changes.
    const me = await page.evaluate(() => window.fetch("/cabinet/api/me").then((r: any) => r.json()))
    const policy = (ceiling_bytes?: number) =>
      run((ceiling_bytes === undefined
        ? world.gateway.ops.opsStorage.showPolicy({ path: { id: me.account_id } })
        : world.gateway.ops.opsStorage.setPolicy({ path: { id: me.account_id }, payload: { ceiling_bytes } })).pipe(Effect.orDie))
    for (const [ceiling, shown] of [[3_000_000_000, "2.79397"], [104_857_600, "0.0976563"]] as const) {
      await policy(ceiling)
      await open("/storage")
      assert.strictEqual(await page.getByLabel("Size limit, GB").inputValue(), shown)
      await page.getByLabel("Do not keep files from unknown people").setChecked(ceiling > 1e9)
      await page.getByRole("button", { name: "Save" }).click()
      await page.getByText("Saved.").waitFor()
      assert.strictEqual((await policy()).ceiling_bytes, ceiling)
    }
    await page.getByLabel("Size limit, GB").fill("0")
    await page.getByRole("button", { name: "Save" }).click()
    await page.getByText("Size limit: GB above 0, up to 1000000.").waitFor()
    await page.getByLabel("Size limit, GB").fill("")
    await page.getByRole("button", { name: "Save" }).click()
    await page.getByText("Saved.").waitFor()
    assert.strictEqual((await policy()).ceiling_bytes, null)
  })

  it("keeps the keyboard's place when a page is drawn again after an action, by a timer or by its live stream", async () => {
    const focused = () => page.evaluate(() => document.activeElement.getAttribute("aria-label") || document.activeElement.textContent)
    /** Marks what `selector` finds now, to wait until the page has drawn it again. */
    const drawnAgain = async (selector: string, action: () => Promise<unknown>) => {
      await page.evaluate((s) => document.querySelector(s).classList.add("before"), selector)
      await action()
      await page.waitForFunction(() => !document.querySelector(".before"), null, { timeout: 15_000 })
    }
    // The balance is drawn again after a top-up: the keyboard stays on its button, the result beside it.
    await open("/balance")
    await page.getByLabel("Amount, KZT").fill("100")
    await page.getByRole("button", { name: "Top up" }).focus()
    await drawnAgain("#app > *", () => page.keyboard.press("Enter"))
    assert.strictEqual(await focused(), "Top up")
    await page.getByText("Paid: 100 KZT").waitFor()
    // The ledger's scrolling region is named by the page's title.
    await page.getByRole("region", { name: "Balance", exact: true }).waitFor()
    // Pages that are not drawn again keep it as they are: the storage policy saved, a key re-issued.
    await open("/storage")
    await page.getByRole("button", { name: "Save" }).focus()
    await page.keyboard.press("Enter")
    await page.getByText("Saved.").waitFor()
    assert.strictEqual(await focused(), "Save")
    await open("/keys")
    await page.getByRole("button", { name: /^Re-issue/ }).first().focus()
    await page.keyboard.press("Enter")
    await page.locator("#new-key").waitFor()
    assert.strictEqual(await page.evaluate(() => document.activeElement.id), "new-key")
    // The exports: the list is drawn again after an export starts, and at "Refresh".
    await open("/exports")
    await page.getByRole("button", { name: "Start an export" }).focus()
    await drawnAgain("#app > *", () => page.keyboard.press("Enter"))
    assert.strictEqual(await focused(), "Start an export")
    await page.getByText("The export is being prepared").waitFor()
    await page.getByRole("button", { name: "Refresh" }).focus()
    for (let i = 0; i < 30 && (await page.getByRole("button", { name: "Download" }).count()) === 0; i++) {
      await drawnAgain("#app > *", () => page.keyboard.press("Enter"))
      assert.strictEqual(await focused(), "Refresh")
    }
    await page.getByRole("button", { name: "Download" }).waitFor()
    // Choosing another number draws the messages and the limits again: the keyboard stays on the choice.
    for (const path of ["/history", "/limits"]) {
      await open(path)
      await page.getByLabel("Number", { exact: true }).focus()
      await drawnAgain("#app > *", () => page.keyboard.press("ArrowDown"))
      assert.strictEqual(await page.evaluate(() => document.activeElement.localName), "select", path)
    }
    // The numbers list drawn again by its live stream (the operator pauses a number).
    await open("/numbers")
    const { numbers } = await page.evaluate(() => window.fetch("/cabinet/api/numbers").then((r: any) => r.json()))
    const { id } = numbers.find((n: any) => n.phone === qrPhone)
    const pause = (paused: boolean) => run(world.gateway.ops.ops.pause({ path: { id }, payload: { paused } }).pipe(Effect.orDie))
    await page.getByRole("button", { name: `Unlink ${qrPhone}` }).focus()
    await pause(true)
    await page.getByRole("row").filter({ hasText: qrPhone }).getByText("Paused by the operator.").waitFor()
    assert.strictEqual(await focused(), `Unlink ${qrPhone}`)
    await pause(false)
    await page.getByText("Paused by the operator.").waitFor({ state: "detached" })
    assert.strictEqual(await focused(), `Unlink ${qrPhone}`)
    // The keyboard on the list's scroll region, scrolled sideways on a phone with the text made
    // twice as large: its rows drawn again keep both the focus and the scroll.
    await page.setViewportSize({ width: 320, height: 740 })
    await page.evaluate(() => (document.querySelector("#app").style.fontSize = "200%"))
    const region = page.getByRole("region", { name: "Numbers", exact: true })
    await region.focus()
    const scrolled = () => page.evaluate(() => document.querySelector(".scroll").scrollLeft)
    const width = await region.evaluate((el: any) => el.scrollWidth - el.clientWidth)
    assert.isAbove(width, 0, "the list scrolls sideways on a phone")
    await region.evaluate((el: any) => el.scroll(el.scrollWidth, 0))
    const before = await scrolled()
    assert.isAbove(before, 0)
    for (const paused of [true, false]) {
      await pause(paused)
      await page.getByText("Paused by the operator.").waitFor({ state: paused ? "visible" : "detached", timeout: 15_000 })
      assert.deepStrictEqual(
        await page.evaluate(() => [document.activeElement.getAttribute("role"), document.activeElement.getAttribute("aria-label")]),
        ["region", "Numbers"]
      )
      assert.strictEqual(await scrolled(), before)
    }
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  it("shows limits, storage, exports and the account in plain words, in English and Russian", async () => {
    await open("/limits")
    await page.getByText("Trust index").waitFor()
    await page.getByText("Warm-up").waitFor()
    // The reasons behind the index, each in words: the new number's short time here is one.
    await page.getByRole("row").filter({ hasText: "Time on the service" }).getByText("This grows by itself").waitFor()
    await accessible("limits page")
    await open("/storage")
    await page.getByText("Within the free allowance.").waitFor()
    await accessible("storage page")
    await page.getByLabel("Do not keep files from group chats").check()
    await page.getByLabel("Delete files older than").fill("90")
    await page.getByRole("button", { name: "Save" }).click()
    await page.getByText("Saved.").waitFor()
    await open("/storage")
    assert.isTrue(await page.getByLabel("Do not keep files from group chats").isChecked())
    assert.strictEqual(await page.getByLabel("Delete files older than").inputValue(), "90")
    await open("/exports")
    await page.getByRole("button", { name: "Start an export" }).click()
    await page.getByText("The export is being prepared").waitFor()
    // The archive is made in the background; once ready it offers a download.
    for (let i = 0; i < 30 && (await page.getByRole("button", { name: "Download" }).count()) === 0; i++) {
      await page.waitForTimeout(500)
      await page.getByRole("button", { name: "Refresh" }).click()
    }
    await page.getByRole("button", { name: "Download" }).waitFor()
    await accessible("exports page")
    await open("/account")
    await page.getByText(EMAIL).waitFor()
    await accessible("account page")
    await page.getByRole("link", { name: "RU" }).click()
    await page.getByRole("heading", { name: "Профиль" }).waitFor()
    await open("/numbers")
    await page.getByRole("heading", { name: "Номера" }).waitFor()
    await accessible("numbers page in Russian")
  })

  it("fits every page on a phone screen: nothing wider than the screen but the tables' own scroll areas", async () => {
    await page.setViewportSize({ width: 375, height: 740 })
    for (const path of ["/balance", "/numbers", "/keys", "/webhook", "/limits", "/history", "/storage", "/exports", "/account"]) {
      await open(path)
      const widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth])
      assert.isAtMost(widths[0]!, widths[1]!, `${path} is wider than the phone's screen`)
      // A table that scrolls sideways can be scrolled from the keyboard too.
      await accessible(`${path} on a phone screen`)
    }
    await page.setViewportSize({ width: 1280, height: 800 })
    await open("/numbers")
  })

  it("says when a page's live updates stop, in the page's language, and when its number is gone", async () => {
    // The gateway gone behind its proxy (answered 502): the page says so and offers a reload, which brings them back.
    const STOPPED = "Страница больше не обновляется сама."
    await page.route("**/cabinet/api/numbers/events", (route) => route.fulfill({ status: 502, body: "Bad Gateway" }))
    await open("/numbers")
    await page.getByRole("alert").getByText(STOPPED).waitFor({ timeout: 15_000 })
    await page.unroute("**/cabinet/api/numbers/events")
    await page.getByRole("button", { name: "Обновить" }).click()
    await page.getByRole("heading", { name: "Номера" }).waitFor()
    await page.getByRole("row").filter({ hasText: qrPhone }).waitFor()
    assert.strictEqual(await page.getByText(STOPPED).count(), 0)
    // The gateway away for longer than the page waits for a reconnect (30 s; the browser would retry forever).
    const tab = await page.context().newPage()
    await tab.clock.install()
    let refused = 0
    await tab.route("**/cabinet/api/numbers/events", (route) => (refused++, route.abort("connectionrefused")))
    await tab.goto(`${world.gateway.url}/cabinet/numbers`)
    // A second attempt comes after the first one's error was handled.
    await run(eventually(Effect.sync(() => refused), (n) => n >= 2, 30_000))
    assert.strictEqual(await tab.getByText(STOPPED).count(), 0)
    await tab.clock.runFor(30_000)
    await tab.getByRole("alert").getByText(STOPPED).waitFor({ timeout: 15_000 })
    await tab.close()
    // A number deleted while its link page is open: its stream is answered 404, and the page says the number is gone.
    const { numbers } = await page.evaluate(() => window.fetch("/cabinet/api/numbers").then((r: any) => r.json()))
    const { id } = numbers.find((n: any) => n.phone === codePhone)
    await page.route("**/cabinet/api/numbers/*/events", async (route) => {
      await run(sql(world.gateway.database, (sql) => sql`UPDATE numbers SET deleted_at = now() WHERE id = ${id}`))
      await route.continue()
    })
    await open(`/link?number=${id}`)
    await page.getByRole("alert").getByText("Такого номера в кабинете нет.").waitFor({ timeout: 15_000 })
    await page.getByRole("link", { name: "К номерам" }).waitFor()
    assert.strictEqual(await page.getByText(STOPPED).count(), 0)
    await page.unrouteAll()
    await open("/numbers")
  })

  it("unlinks a number and signs out", async () => {
    // The number still working; the other one was logged out from its phone above, and is stopped already.
    // Its button goes with the status it unlinks: the result takes the keyboard, and keeps it.
    await page.getByRole("button", { name: `Отключить ${qrPhone}` }).focus()
    await page.keyboard.press("Enter")
    await page.getByRole("status").getByText(`Номер ${qrPhone} отключён.`).waitFor()
    await page.getByRole("row").filter({ hasText: qrPhone }).getByRole("cell", { name: /^Остановлен/ }).waitFor({ timeout: 15_000 })
    assert.strictEqual(await page.evaluate(() => document.activeElement.textContent), `Номер ${qrPhone} отключён.`)
    await page.getByRole("button", { name: "Выйти" }).click()
    await page.waitForURL(/\/cabinet\/login$/)
    await open("/balance")
    await page.waitForURL(/\/cabinet\/login\?next=/)
  })
}, 180_000)
