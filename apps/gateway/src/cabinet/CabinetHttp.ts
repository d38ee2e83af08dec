/**
 * The signed-in cabinet: what its pages read and change. Every call acts for the session's
 * account only: a number, key, export or webhook event of another account is "not found",
 * whatever id is given. The work is done by the same services as the public API and the
 * operator's (the cabinet acts as an account-wide principal where the API takes a key).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as PgClient from "@effect/sql-pg/PgClient"
import { CurrentCabinetUser } from "@wagate/cabinet/CabinetApi"
import * as Password from "@wagate/cabinet/Password"
import {
  InsufficientBalance,
  InvalidCredentials,
  InvalidParam,
  NotFound,
  NotImplemented,
  NumberNotFound,
  NumbersLimit,
  PhoneTaken
} from "@wagate/domain/ApiError"
import type { Principal } from "@wagate/domain/Auth"
import { type AccountId, ApiKeyId, NumberId } from "@wagate/domain/Ids"
import * as Pricing from "@wagate/domain/Pricing"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import * as StorageReport from "@wagate/media/StorageReport"
import { Accounting } from "@wagate/numbers/billing/Accounting"
import * as Payments from "@wagate/numbers/billing/Payments"
import { PaymentProviders } from "@wagate/numbers/billing/PaymentProvider"
import * as TestPayments from "@wagate/numbers/billing/TestPayments"
import { Accounts, balanceFigures, toLinkedNumber } from "@wagate/store/Accounts"
import { ApiKeys } from "@wagate/store/ApiKeys"
import { Billing } from "@wagate/store/Billing"
import { CabinetUsers } from "@wagate/store/CabinetUsers"
import { MediaFiles } from "@wagate/store/MediaFiles"
import { Messages } from "@wagate/store/Messages"
import * as Outbox from "@wagate/store/Outbox"
import { WebhookLog } from "@wagate/webhooks/WebhookLog"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { KeyAuth } from "../auth/KeyAuth.js"
import { Settings } from "../Config.js"
import { bounded, firstLink } from "../http/EntityCalls.js"
import { GatewayApi } from "../http/GatewayApi.js"
import { makeArchiveExports } from "../http/handlers/ExportsHttp.js"
import { makeLimits } from "../http/handlers/LimitsHttp.js"
import { retainedSince } from "../http/handlers/Retention.js"
import { makeWebhookCalls } from "../http/handlers/WebhooksHttp.js"
import { normalizePhone, phoneRefusal } from "../http/Params.js"
import { endedSession, sessionEnded, startSession } from "./CabinetAuth.js"
import * as LinkView from "./LinkView.js"

/** The cabinet acts for the whole account, as an account key would (key id 0: no key). */
const principalOf = (accountId: AccountId): Principal => ({ keyId: 0 as ApiKeyId, accountId, numberId: null })

export const CabinetHttp = HttpApiBuilder.group(GatewayApi, "cabinet", (handlers) =>
  Effect.gen(function*() {
    const users = yield* CabinetUsers
    const accounts = yield* Accounts
    const accounting = yield* Accounting
    const billing = yield* Billing
    const keys = yield* ApiKeys
    const auth = yield* KeyAuth
    const messages = yield* Messages
    const files = yield* MediaFiles
    const log = yield* WebhookLog
    const pg = yield* PgClient.PgClient
    const providers = yield* PaymentProviders
    const numbers = yield* NumberEntity.client
    const webhooks = yield* makeWebhookCalls
    const limits = yield* makeLimits
    const exports = yield* makeArchiveExports
    const links = yield* LinkView.makeLinkView
    const { entityTimeoutMs, paymentsTestSecret } = yield* Settings
    const context = yield* Effect.context<Accounting | PaymentProviders | Accounts>()
    const entityTimeout = `${entityTimeoutMs} millis` as const
    const paymentsOn = providers.has(TestPayments.NAME) && Option.isSome(paymentsTestSecret)

    // The HTTP server stops only once every answer has ended: an open stream would hold the stop.
    const stopping = yield* Deferred.make<void>()
    yield* Effect.addFinalizer(() => Deferred.succeed(stopping, undefined))
    /**
     * Server-sent events for the session: they end with the session (log-out, a password change
     * or reset, expiry) or as the server begins to stop. The connection closes with them, so the
     * browser's EventSource reconnects on a new one: to the next process, or to a 401 that stops it.
     */
    const live = <E>(sessionHash: Buffer, events: Stream.Stream<Uint8Array, E>) => {
      const ended = Effect.provideService(sessionEnded(sessionHash), CabinetUsers, users)
      return HttpServerResponse.stream(Stream.interruptWhen(events, Effect.race(Deferred.await(stopping), ended)), {
        contentType: "text/event-stream",
        headers: { "cache-control": "no-store", "x-accel-buffering": "no", connection: "close" }
      })
    }

    const user = CurrentCabinetUser
    const balance = (accountId: AccountId) =>
      Effect.map(Effect.flatMap(accounting.now, (now) => accounts.funds(accountId, now)), balanceFigures)
    /** The account's live number `id`, or 404 number_not_found (also for another account's). */
    const owned = (accountId: AccountId, id: number) =>
      Effect.flatMap(
        accounts.findNumber(accountId, { id }, null),
        Option.match({ onNone: () => Effect.fail(new NumberNotFound()), onSome: Effect.succeed })
      )

    /** The account's numbers as the Numbers page shows them, with why each is in its status. */
    const numberList = (accountId: AccountId) =>
      Effect.gen(function*() {
        const rows = yield* accounts.numbers(accountId)
        const funds = yield* accounts.funds(accountId, yield* accounting.now)
        const account = yield* accounts.find(accountId)
        return {
          numbers: rows.map((n) => ({
            ...toLinkedNumber(n, funds),
            reason: n.status_reason,
            restricted_until: n.restricted_until,
            restriction_reason: n.restriction_reason
          })),
          limit: Option.match(account, { onNone: () => 0, onSome: (a) => a.numbers_limit })
        }
      })

    return handlers
      .handle("me", () =>
        Effect.map(user, (u) => ({ account_id: u.accountId, email: u.email, company: u.company, csrf: u.csrf, payments: paymentsOn })))
      .handle("logOut", () =>
        Effect.gen(function*() {
          const u = yield* user
          yield* users.endSession(u.sessionHash)
          return endedSession({ message: "Signed out" })
        }))
      .handle("changePassword", ({ payload }) =>
        Effect.gen(function*() {
          const u = yield* user
          const stored = yield* users.passwordHash(u.accountId)
          if (stored === null || !(yield* Password.verify(stored, payload.current))) {
            return yield* new InvalidCredentials({ error: "The current password is wrong" })
          }
          // Every session ends, this one too; it goes on under a new id.
          yield* users.setPassword(u.accountId, yield* Password.hash(payload.password))
          return yield* startSession(u.accountId, { message: "Password changed; other sessions are signed out" })
        }))
      .handle("balance", () =>
        Effect.gen(function*() {
          const u = yield* user
          const now = yield* accounting.now
          const funds = yield* accounts.funds(u.accountId, now)
          const rows = yield* billing.ledger(u.accountId, { limit: 50, before: null })
          return {
            balance: balanceFigures(funds),
            paid_until: funds.paidUntil,
            to_resume: funds.toResume,
            number_day: Pricing.tiynToKzt(Pricing.NUMBER_DAILY_TIYN),
            entries: rows.map((r) => ({ ...r, amount: Pricing.tiynToKzt(r.amount) }))
          }
        }))
      .handle("topUp", ({ payload }) =>
        Effect.gen(function*() {
          const u = yield* user
          const test = providers.get(TestPayments.NAME)
          if (!paymentsOn || test === undefined || Option.isNone(paymentsTestSecret)) {
            return yield* new NotImplemented({ error: "Online payment is not set up on this gateway; ask its operator to credit the account" })
          }
          const amount = Pricing.kztToTiyn(payload.amount)
          const { paymentId } = yield* test.checkout({ accountId: u.accountId, amountTiyn: amount })
          // The test provider pays at once and notifies the gateway as any provider would.
          const signed = yield* TestPayments.signedNow(paymentsTestSecret.value, {
            payment_id: paymentId,
            account_id: u.accountId,
            amount
          })
          const received = yield* Payments.receive(TestPayments.NAME, signed).pipe(
            Effect.provide(context),
            Effect.catchTags({
              PaymentRejected: (e) => Effect.dieMessage(`the test provider's own event was refused: ${e.reason}`),
              BalanceLimit: (e) => new InvalidParam({ error: Pricing.overMaximum(e.balance, e.amount) })
            })
          )
          return { payment_id: paymentId, credited: received.known && received.credited, balance: yield* balance(u.accountId) }
        }))
      .handle("numbers", () => Effect.flatMap(user, (u) => numberList(u.accountId)))
      .handle("numbersEvents", () =>
        Effect.map(user, (u) =>
          live(
            u.sessionHash,
            LinkView.changes(numberList(u.accountId), (a, b) => JSON.stringify(a) === JSON.stringify(b), "numbers", "2 seconds")
          )))
      .handle("addNumber", ({ payload }) =>
        Effect.gen(function*() {
          const u = yield* user
          const phone = normalizePhone(payload.phone)
          if (phone === null) {
            return yield* new InvalidParam({ error: phoneRefusal(payload.phone, "Enter the phone in international format, digits only: 77011234567") })
          }
          const { number } = yield* accounting.addNumber(u.accountId, phone).pipe(
            Effect.catchTags({
              PhoneTaken: () => new PhoneTaken(),
              NumbersLimitReached: (e) => new NumbersLimit({ error: `The account may hold ${e.limit} numbers` }),
              AccountNotFound: () => Effect.dieMessage("the session's account is gone"),
              InsufficientBalance: (e) =>
                new InsufficientBalance({
                  error: `Payment comes first: the balance (${Pricing.tiynToKzt(e.balance)} KZT) does not cover ` +
                    `the number's first day (${Pricing.tiynToKzt(e.needed)} KZT). Top up the balance, then add the number.`
                })
            })
          )
          const link = yield* numbers(String(number.id)).Link({ method: payload.method ?? "qr" }).pipe(
            bounded(entityTimeout),
            firstLink(number.id, "link it from the numbers page in a moment")
          )
          const funds = yield* accounts.funds(u.accountId, yield* accounting.now)
          return { number: toLinkedNumber({ ...number, status: link.status }, funds), link: yield* links.view(number.id, link) }
        }))
      .handle("linkStatus", ({ path }) =>
        Effect.gen(function*() {
          const u = yield* user
          yield* owned(u.accountId, path.id)
          return yield* links.current(path.id)
        }))
      .handle("link", ({ path, payload }) =>
        Effect.gen(function*() {
          const u = yield* user
          yield* owned(u.accountId, path.id)
          const link = yield* numbers(String(path.id)).Link({ method: payload.method ?? "qr" }).pipe(bounded(entityTimeout))
          return yield* links.view(path.id, link)
        }))
      .handle("unlink", ({ path }) =>
        Effect.gen(function*() {
          const u = yield* user
          yield* owned(u.accountId, path.id)
          const state = yield* numbers(String(path.id)).Unlink().pipe(bounded(entityTimeout))
          return yield* links.view(path.id, state)
        }))
      .handle("linkEvents", ({ path }) =>
        Effect.gen(function*() {
          const u = yield* user
          yield* owned(u.accountId, path.id)
          return live(u.sessionHash, links.events(path.id))
        }))
      .handle("keys", () => Effect.map(Effect.flatMap(user, (u) => users.keys(u.accountId)), (keys) => ({ keys })))
      .handle("issueKey", ({ payload }) =>
        Effect.gen(function*() {
          const u = yield* user
          if (payload.number_id !== undefined) yield* owned(u.accountId, payload.number_id)
          return yield* keys.issue(u.accountId, payload.number_id === undefined ? null : NumberId.make(payload.number_id))
        }))
      .handle("reissueKey", ({ path }) =>
        Effect.gen(function*() {
          const u = yield* user
          if (!(yield* users.ownsKey(u.accountId, path.id))) return yield* new NotFound({ error: `No key ${path.id}` })
          const result = yield* keys.reissue(ApiKeyId.make(path.id))
          if (Option.isNone(result)) return yield* new NotFound({ error: `No key ${path.id}` })
          yield* auth.revoked(result.value.revokedHash)
          return result.value.issued
        }))
      .handle("webhook", () =>
        Effect.gen(function*() {
          const u = yield* user
          const webhook = yield* webhooks.show(u.accountId).pipe(
            Effect.map(Option.some),
            Effect.catchTag("NotFound", () => Effect.succeedNone)
          )
          const deliveries = yield* log.deliveries(u.accountId, { status: undefined, before: undefined, limit: 20 })
          return { webhook: Option.getOrNull(webhook), deliveries }
        }))
      .handle("setWebhook", ({ payload }) => Effect.flatMap(user, (u) => webhooks.set(u.accountId, payload)))
      .handle("rotateSecret", () => Effect.flatMap(user, (u) => webhooks.rotate(u.accountId)))
      .handle("testWebhook", () =>
        Effect.gen(function*() {
          const u = yield* user
          const now = yield* Clock.currentTimeMillis
          const queued = yield* Outbox.enqueue(pg, u.accountId, Outbox.envelope("webhook.test", now, {
            message: "A test event from the wagate cabinet",
            account_id: u.accountId
          })).pipe(Effect.orDie)
          if (queued.length === 0) return yield* new NotFound({ error: "Set the webhook URL first" })
          return { message: "The test event is queued" }
        }))
      .handle("resend", ({ payload }) => Effect.flatMap(user, (u) => webhooks.resend(u.accountId, { eventId: payload.event_id })))
      .handle("limits", ({ path }) =>
        Effect.gen(function*() {
          const u = yield* user
          const shown = yield* limits(principalOf(u.accountId), path.id)
          const factors = yield* numbers(String(path.id)).TrustFactors().pipe(bounded(entityTimeout))
          return { ...shown, factors }
        }))
      .handle("messages", ({ urlParams }) =>
        Effect.gen(function*() {
          const u = yield* user
          const number = urlParams.number === undefined ? null : yield* owned(u.accountId, urlParams.number)
          const page = yield* messages.page({
            accountId: u.accountId,
            numberId: number?.id ?? null,
            before: urlParams.before,
            limit: 50
          }, yield* retainedSince)
          return page
        }))
      .handle("storage", () =>
        Effect.gen(function*() {
          const u = yield* user
          const now = yield* accounting.now
          const [snapshot, funds] = yield* Effect.all([files.snapshot(u.accountId), accounts.funds(u.accountId, now)])
          return StorageReport.make({ ...snapshot, daysLeft: funds.daysCovered })
        }))
      .handle("setStoragePolicy", ({ payload }) => Effect.flatMap(user, (u) => files.setPolicy(u.accountId, payload)))
      .handle("exports", () => Effect.flatMap(user, (u) => exports.list(principalOf(u.accountId))))
      .handle("createExport", ({ payload }) =>
        Effect.flatMap(user, (u) =>
          exports.create(principalOf(u.accountId), {
            ...(payload.number === undefined ? {} : { from: payload.number }),
            include_media: payload.include_media ?? true
          })))
      .handle("exportLink", ({ path }) => Effect.flatMap(user, (u) => exports.get(principalOf(u.accountId), path.id)))
  }))
