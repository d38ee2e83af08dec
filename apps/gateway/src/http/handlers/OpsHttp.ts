import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import {
  EmailTaken,
  InsufficientBalance,
  InvalidParam,
  NotFound,
  NumberNotFound,
  NumbersLimit,
  PhoneTaken
} from "@wagate/domain/ApiError"
import { AccountId, ApiKeyId, NumberId } from "@wagate/domain/Ids"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import { OperatorAuth } from "@wagate/domain/OpsApi"
import { linkView } from "../../cabinet/LinkView.js"
import * as Pricing from "@wagate/domain/Pricing"
import { Accounting } from "@wagate/numbers/billing/Accounting"
import { Accounts, balanceFigures, toLinkedNumber } from "@wagate/store/Accounts"
import { ApiKeys } from "@wagate/store/ApiKeys"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Instant, Int8, NullOrInstant, NullOrInt8, NullOrString } from "@wagate/store/Columns"
import { isoOrNull } from "@wagate/store/Time"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { KeyAuth } from "../../auth/KeyAuth.js"
import * as Prometheus from "../../infra/Prometheus.js"
import { Settings } from "../../Config.js"
import { makeOperatorCheck } from "../../auth/OperatorCheck.js"
import { bounded, firstLink } from "../EntityCalls.js"
import { normalizePhone, phoneRefusal } from "../Params.js"
import { GatewayApi } from "../GatewayApi.js"
import { ClusterView } from "../../ops/ClusterView.js"
import { CabinetLinks } from "../../cabinet/CabinetLinks.js"

/** A key of the account as the operator sees it: revoked ones too, never the key itself. */
const KeyRow = Schema.Struct({
  id: Int8,
  prefix: Schema.String,
  number_id: NullOrInt8,
  created_at: Instant,
  revoked_at: NullOrInstant
})

export const OperatorAuthLive = Layer.effect(
  OperatorAuth,
  Effect.map(makeOperatorCheck, (check) => OperatorAuth.of({ operator: check }))
)

export const OpsHttp = HttpApiBuilder.group(GatewayApi, "ops", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const keys = yield* ApiKeys
    const auth = yield* KeyAuth
    const sql = yield* SqlClient.SqlClient
    const accounting = yield* Accounting
    const numbers = yield* NumberEntity.client
    const { entityTimeoutMs } = yield* Settings
    const clusterView = yield* ClusterView
    const links = yield* CabinetLinks
    const entityTimeout = `${entityTimeoutMs} millis` as const

    const liveNumber = (id: number) =>
      Effect.flatMap(
        sql`SELECT id FROM numbers WHERE id = ${id} AND deleted_at IS NULL`.pipe(Effect.orDie),
        (rows) => rows.length === 0 ? Effect.fail(new NotFound({ error: `No number ${id}` })) : Effect.void
      )
    const keysOf = SqlSchema.findAll({
      Request: Schema.Number,
      Result: KeyRow,
      execute: (accountId) =>
        sql`SELECT id, prefix, number_id, created_at, revoked_at FROM api_keys WHERE account_id = ${accountId} ORDER BY id`
    })
    const faultOf = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ fault: NullOrString, fault_at: NullOrInstant }),
      execute: (numberId) => sql`SELECT fault, fault_at FROM numbers WHERE id = ${numberId}`
    })

    const account = (id: number) =>
      Effect.flatMap(
        accounts.find(AccountId.make(id)),
        Option.match({ onNone: () => Effect.fail(new NotFound({ error: `No account ${id}` })), onSome: Effect.succeed })
      )
    const balance = (id: AccountId) =>
      Effect.map(Effect.flatMap(DomainClock.now, (now) => accounts.funds(id, now)), balanceFigures)

    return handlers
      .handle("createAccount", ({ payload }) =>
        accounts.create({ email: payload.email.trim(), company: payload.company.trim() }).pipe(
          Effect.catchTag("EmailTaken", () => new EmailTaken())
        ))
      .handle("showAccount", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* account(path.id)
          const now = yield* DomainClock.now
          const funds = yield* accounts.funds(found.id, now)
          const numbers = yield* accounts.numbers(found.id)
          const keyRows = yield* keysOf(found.id).pipe(Effect.orDie)
          return {
            account: found,
            numbers: numbers.map((n) => toLinkedNumber(n, funds)),
            keys: keyRows.map((k) => ({
              id: k.id,
              prefix: k.prefix,
              number_id: k.number_id,
              created_at: k.created_at.toISOString(),
              revoked_at: isoOrNull(k.revoked_at)
            })),
            balance: balanceFigures(funds)
          }
        }))
      .handle("credit", ({ path, payload }) =>
        Effect.gen(function*() {
          const found = yield* account(path.id)
          yield* accounting.credit(found.id, Pricing.kztToTiyn(payload.amount), { kind: "top_up", note: payload.note ?? null }).pipe(
            Effect.catchTag("BalanceLimit", (e) => new InvalidParam({ error: Pricing.overMaximum(e.balance, e.amount) }))
          )
          return yield* balance(found.id)
        }))
      .handle("addNumber", ({ path, payload }) =>
        Effect.gen(function*() {
          const phone = normalizePhone(payload.phone)
          if (phone === null) {
            return yield* new InvalidParam({ error: phoneRefusal(payload.phone, "phone must be digits in international format") })
          }
          const found = yield* account(path.id)
          const { number } = yield* accounting.addNumber(found.id, phone).pipe(
            Effect.catchTags({
              PhoneTaken: () => new PhoneTaken(),
              NumbersLimitReached: () => new NumbersLimit(),
              AccountNotFound: () => new NotFound({ error: `No account ${path.id}` }),
              InsufficientBalance: (e) =>
                new InsufficientBalance({
                  error: `Payment comes first: the balance (${Pricing.tiynToKzt(e.balance)} KZT) does not cover ` +
                    `the number's first day (${Pricing.tiynToKzt(e.needed)} KZT); top up the account, then add the number`
                })
            })
          )
          // Linking goes through the number's entity, which owns the connection.
          const link = yield* numbers(String(number.id)).Link({ method: payload.method ?? "qr" }).pipe(
            bounded(entityTimeout),
            firstLink(number.id, `link it with POST /ops/v1/numbers/${number.id}/link (CLI: number link --number ${number.id})`)
          )
          const funds = yield* accounts.funds(found.id, yield* DomainClock.now)
          return { number: toLinkedNumber({ ...number, status: link.status }, funds), link: yield* linkView(number.id, link) }
        }))
      .handle("linkStatus", ({ path }) =>
        Effect.gen(function*() {
          yield* liveNumber(path.id)
          const link = yield* linkView(path.id, yield* numbers(String(path.id)).Connection().pipe(bounded(entityTimeout)))
          const row = Option.getOrUndefined(yield* faultOf(path.id).pipe(Effect.orDie))
          const fault = row === undefined || row.fault === null
            ? null
            : { error: row.fault, at: new Date(row.fault_at ?? 0).toISOString() }
          return { ...link, fault }
        }))
      .handle("link", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* liveNumber(path.id)
          const link = yield* numbers(String(path.id)).Link({ method: payload.method ?? "qr" }).pipe(bounded(entityTimeout))
          return yield* linkView(path.id, link)
        }))
      .handle("unlink", ({ path }) =>
        Effect.gen(function*() {
          yield* liveNumber(path.id)
          const state = yield* numbers(String(path.id)).Unlink().pipe(bounded(entityTimeout))
          yield* Effect.logInfo(`number ${path.id} unlinked by the operator: ${state.reason ?? state.status}`)
          return yield* linkView(path.id, state)
        }))
      .handle("relink", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* liveNumber(path.id)
          const client = numbers(String(path.id))
          yield* client.Unlink().pipe(bounded(entityTimeout))
          yield* Effect.logInfo(`number ${path.id} unlinked by the operator to link it again`)
          const link = yield* client.Link({ method: payload.method ?? "qr" }).pipe(bounded(entityTimeout))
          return yield* linkView(path.id, link)
        }))
      .handle("pause", ({ path, payload }) =>
        Effect.gen(function*() {
          const { accountId: owner } = yield* accounting.operatorPause(NumberId.make(path.id), payload.paused).pipe(
            Effect.catchTag("NumberMissing", () => new NotFound({ error: `No number ${path.id}` }))
          )
          const accountId = AccountId.make(owner)
          const found = yield* accounts.findNumber(accountId, { id: path.id }, null)
          return toLinkedNumber(Option.getOrThrow(found), yield* accounts.funds(accountId, yield* accounting.now))
        }))
      .handle("issueKey", ({ payload }) =>
        Effect.gen(function*() {
          const found = yield* account(payload.account_id)
          if (payload.number_id !== undefined) {
            const number = yield* accounts.findNumber(found.id, { id: payload.number_id }, null)
            if (Option.isNone(number)) return yield* new NumberNotFound()
          }
          return yield* keys.issue(found.id, payload.number_id === undefined ? null : NumberId.make(payload.number_id))
        }))
      .handle("cabinetResetLink", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* account(path.id)
          const link = yield* links.issue(found.id, "reset")
          yield* Effect.logInfo(`cabinet reset link issued by the operator for account ${found.id}`)
          return link
        }))
      .handle("cluster", () => clusterView.read)
      .handle("metrics", () =>
        Effect.gen(function*() {
          const view = yield* clusterView.read
          return yield* Effect.promise(() => Prometheus.snapshot(view))
        }))
      .handle("reissueKey", ({ path }) =>
        Effect.gen(function*() {
          const result = yield* keys.reissue(ApiKeyId.make(path.id))
          if (Option.isNone(result)) return yield* new NotFound({ error: `No live key ${path.id}` })
          yield* auth.revoked(result.value.revokedHash)
          return result.value.issued
        }))
  })).pipe(Layer.provide(ClusterView.Default))
