/**
 * The cabinet in the customer's words, in a real browser (Debian's Chromium, headless, driven by
 * playwright-core) on a gateway with the simulated network: the Russian page says the server's
 * refusals, link failures and message statuses in Russian and an English page has no Russian in
 * it; Messages names people and groups rather than WhatsApp's ids; a number logged out from the
 * phone or whose QR codes ran out says so plainly; a tab left open keeps working after the
 * password was changed in another; the header's links are big enough for a finger; a tab whose
 * session ended elsewhere goes to the log-in page, which says why.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { cabinetSettings, hasChromium, launchChromium, type Mailbox, mailbox } from "../support/Cabinet.js"
import { uniquePhone } from "../support/Fixtures.js"
import { freshDatabase, type RunningGateway, startGateway } from "../support/TestGateway.js"

declare const document: any


const scope = Effect.runSync(Scope.make())
let gateway: RunningGateway
let box: Mailbox
let browser: Browser
let ru: BrowserContext
let page: Page

const run = <A>(effect: Effect.Effect<A, unknown, never>) => Effect.runPromise(effect)

const EMAIL = "dana@shop.kz"
const PASSWORD = "shubat and irimshik 2026"
const CHANGED_PASSWORD = "another long password 2026"
const phone = uniquePhone()

/** Opens a cabinet page and waits until its script has filled it. */
const open = async (on: Page, path: string) => {
  await on.goto(`${gateway.url}/cabinet${path}`)
  await on.waitForFunction(() => !/^(Loading…|Загрузка…)$/.test(document.querySelector("#app").textContent))
}
const appText = (on: Page) => on.locator("#app").textContent().then((text) => text ?? "")

describe.skipIf(!hasChromium)("the cabinet in the customer's words", () => {
  beforeAll(async () => {
    ;({ gateway, box } = await run(Scope.extend(
      Effect.gen(function*() {
        const box = yield* mailbox
        // The phone scans when the test says so; an unscanned QR runs out after 6 × 500 ms.
        const sim = yield* Layer.build(SimulatorDriver.layerTest({ autoScan: false, qrRefreshMs: 500 }))
        const gateway = yield* startGateway(yield* freshDatabase, { settings: cabinetSettings(box), sim })
        return { gateway, box }
      }).pipe(Effect.orDie),
      scope
    )))
    browser = await launchChromium()
    ru = await browser.newContext({ locale: "ru-RU", extraHTTPHeaders: { "accept-language": "ru" } })
    page = await ru.newPage()
    page.on("dialog", (dialog) => dialog.accept())
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await run(Scope.close(scope, Exit.void))
  }, 60_000)

  it("answers in the page's language only: sign-up in English, reset, refusals and the balance in Russian", async () => {
    const en = await browser.newContext({ locale: "en-GB" })
    const english = await en.newPage()
    await open(english, "/signup")
    await english.getByLabel("Email").fill(EMAIL)
    await english.getByLabel("Company or shop name").fill("Dana's shop")
    await english.getByLabel("New password").fill(PASSWORD)
    await english.getByRole("button", { name: "Create account" }).click()
    await english.getByText("Check your mailbox").waitFor()
    const signedUp = await english.locator(".msg").textContent()
    await en.close()
    const link = new URL(await run(box.link(EMAIL, "/cabinet/confirm")))
    await page.goto(`${gateway.url}${link.pathname}${link.search}`)
    await page.waitForURL(/\/cabinet\/balance$/)
    assert.strictEqual(signedUp, "Check your mailbox: we have sent a link to confirm the address.")

    await open(page, "/reset")
    await page.getByLabel("Эл. почта").fill("nobody@shop.kz")
    await page.getByRole("button", { name: "Прислать ссылку" }).click()
    await page.getByText("Если у адреса есть кабинет").waitFor()
    assert.strictEqual(await page.locator(".msg").textContent(), "Если у адреса есть кабинет, ссылка для нового пароля в пути.")

    await open(page, "/login")
    await page.getByLabel("Эл. почта").fill(EMAIL)
    await page.getByLabel("Пароль").fill("not the password at all")
    await page.getByRole("button", { name: "Войти" }).click()
    await page.getByRole("alert").getByText("Неверная почта или пароль.").waitFor()

    await open(page, "/balance")
    // No numbers: nothing is charged, so no "days left 0" beside the balance.
    await page.getByText("Номеров нет: ничего не списывается.").waitFor()
    assert.strictEqual(await page.getByText("Хватит на дней").count(), 0)

    await open(page, "/numbers")
    await page.getByText("Ввести на телефоне код из 8 букв и цифр").waitFor()
    await page.getByLabel("Номер с кодом страны").fill("123")
    await page.getByRole("button", { name: "Добавить номер" }).click()
    await page.getByRole("alert").getByText("Номер с кодом страны, только цифры: 77011234567.").waitFor()

    await open(page, "/account")
    await page.getByLabel("Текущий пароль").fill("not the password at all")
    await page.getByLabel("Новый пароль").fill("a brand new password")
    await page.getByRole("button", { name: "Сохранить" }).click()
    await page.getByRole("alert").getByText("Текущий пароль неверен.").waitFor()
  })

  let numberId = ""
  it("names the people and groups in Messages, with the status in words", async () => {
    await open(page, "/balance")
    await page.getByLabel("Сумма, ₸").fill("20000")
    await page.getByRole("button", { name: "Пополнить" }).click()
    await page.getByText("Оплачено:").waitFor()
    await open(page, "/numbers")
    await page.getByLabel("Номер с кодом страны").fill(phone)
    await page.getByRole("button", { name: "Добавить номер" }).click()
    await page.waitForURL(/\/cabinet\/link\?number=\d+/)
    numberId = new URL(page.url()).searchParams.get("number")!
    await page.locator("img.qr").waitFor()
    await run(gateway.sim.scan(phone).pipe(Effect.orDie))
    await page.getByText("Подключено. Номер работает").waitFor({ timeout: 15_000 })

    const person = uniquePhone()
    await run(gateway.sim.inbound({ to: phone, from: person, name: "Aigerim", text: "Salem, is it ready?" }))
    await run(gateway.sim.inbound({
      to: phone,
      from: uniquePhone(),
      text: "Who brings the baursak?",
      group: { id: "120363000000000001", subject: "Shop team" }
    }))
    for (let i = 0; i < 100; i++) {
      await open(page, "/history")
      if ((await page.getByRole("row").count()) >= 3) break
      await page.waitForTimeout(100)
    }
    const personRow = page.getByRole("row").filter({ hasText: "Salem, is it ready?" })
    await personRow.getByRole("cell", { name: `Aigerim · +${person}`, exact: true }).waitFor()
    await personRow.getByRole("cell", { name: "получено", exact: true }).waitFor()
    const groupRow = page.getByRole("row").filter({ hasText: "Who brings the baursak?" })
    await groupRow.getByRole("cell", { name: "Shop team", exact: true }).waitFor()
    assert.notMatch(await appText(page), /@(c|g)\.us/)
  })

  it("says a number was logged out from the phone, and that the QR codes ran out", async () => {
    await run(gateway.sim.disconnect(phone, "logged_out").pipe(Effect.orDie))
    await open(page, "/numbers")
    await page.getByRole("cell", { name: "Остановлен — отключён на телефоне" }).waitFor({ timeout: 15_000 })
    await open(page, `/link?number=${numberId}`)
    await page.getByText("Номер отключили на телефоне. Подключите снова:").waitFor()
    assert.strictEqual(await page.getByText("Подключить не удалось").count(), 0)
    // Linking again, and nobody scans: the codes run out.
    await page.getByRole("button", { name: "Сканировать QR-код" }).click()
    await page.locator("img.qr").waitFor()
    await page.getByText("Подключить не удалось: QR-коды закончились. Попробуйте ещё раз.").waitFor({ timeout: 15_000 })
  })

  it("keeps an open tab working after the password was changed in another tab", async () => {
    await open(page, "/keys")
    const other = await ru.newPage()
    await open(other, "/account")
    await other.getByLabel("Текущий пароль").fill(PASSWORD)
    await other.getByLabel("Новый пароль").fill(CHANGED_PASSWORD)
    await other.getByRole("button", { name: "Сохранить" }).click()
    await other.getByText("Пароль изменён").waitFor()
    await other.close()
    // The first tab still holds the old session's token; the cookie is the new session's.
    await page.getByRole("button", { name: "Выпустить ключ" }).click()
    await page.locator("#new-key").waitFor()
    assert.match((await page.locator("#new-key").textContent())!, /^wag_acc_/)
    await page.getByRole("button", { name: /^Перевыпустить/ }).click()
    await page.locator("#new-key").waitFor()
    assert.strictEqual(await page.getByRole("alert").count(), 0)
  })

  it("gives the header's links and the language switch finger-sized targets on a phone", async () => {
    await page.setViewportSize({ width: 375, height: 740 })
    await open(page, "/numbers")
    const boxes = await page.locator("header nav a, header #logout, header .lang a, header .lang span").evaluateAll(
      (els: Array<any>) => els.map((el) => ({ text: el.textContent, ...el.getBoundingClientRect().toJSON() }))
    )
    assert.isAtLeast(boxes.length, 10)
    for (const b of boxes) assert.isAtLeast(b.height, 44, `${b.text}: ${b.height} px high`)
    for (const b of boxes.filter((b: any) => b.text === "EN" || b.text === "RU")) assert.isAtLeast(b.width, 44, `${b.text}: ${b.width} px wide`)
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  it("sends a tab whose session ended to the log-in page, saying why: at its next call, and when its live stream is refused", async () => {
    const ENDED = "Сеанс завершён (выход, смена пароля или истёк срок): войдите снова."
    const signOutElsewhere = async () => {
      const other = await ru.newPage()
      await open(other, "/account")
      await other.getByRole("button", { name: "Выйти" }).click()
      await other.waitForURL(/\/cabinet\/login$/)
      await other.close()
    }
    const signInAgain = async () => {
      await page.getByLabel("Эл. почта").fill(EMAIL)
      await page.getByLabel("Пароль").fill(CHANGED_PASSWORD)
      await page.getByRole("button", { name: "Войти" }).click()
    }
    // A page that calls the API: refused at its next call.
    await open(page, "/keys")
    await signOutElsewhere()
    await page.getByRole("button", { name: "Выпустить ключ" }).click()
    await page.waitForURL(/\/cabinet\/login\?/)
    await page.getByRole("status").getByText(ENDED).waitFor()
    await signInAgain()
    await page.waitForURL(/\/cabinet\/keys$/)
    // Pages that only listen: their stream ends with the session, and its reconnect is answered 401.
    for (const path of ["/numbers", `/link?number=${numberId}`]) {
      await open(page, path)
      await signOutElsewhere()
      await page.waitForURL(/\/cabinet\/login\?/, { timeout: 30_000 })
      await page.getByRole("status").getByText(ENDED).waitFor()
      assert.strictEqual(new URL(page.url()).searchParams.get("next"), `/cabinet${path}`)
      await signInAgain()
      await page.waitForURL((url) => `${url.pathname}${url.search}` === `/cabinet${path}`)
    }
    // A visitor never signed in is only asked to sign in.
    await signOutElsewhere()
    await open(page, "/balance")
    await page.waitForURL(/\/cabinet\/login\?next=/)
    await page.getByRole("button", { name: "Войти" }).waitFor()
    assert.strictEqual(await page.getByText(ENDED).count(), 0)
  })
}, 180_000)
