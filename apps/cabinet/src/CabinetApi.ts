/**
 * The cabinet's own HTTP API under `/cabinet/api`: what the cabinet's pages call, with the
 * customer's session (an HttpOnly cookie) instead of an API key. It is not part of the public
 * `/api/v1` contract and is left out of its OpenAPI document.
 *
 * Every state change carries the page's CSRF token in `X-CSRF-Token`; the session's own for
 * signed-in calls, the `wagate_csrf` cookie's before signing in.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Balance } from "@wagate/domain/Account"
import * as E from "@wagate/domain/ApiError"
import { ArchiveExport, ExportList } from "@wagate/domain/ArchiveExport"
import { Before, id, IdParam, OptionalBody } from "@wagate/domain/api/Params"
import { AccountId } from "@wagate/domain/Ids"
import { Limits, TrustFactors } from "@wagate/domain/Limits"
import { MessagePage } from "@wagate/domain/Message"
import { LinkedNumber } from "@wagate/domain/LinkedNumber"
import { LedgerEntry } from "@wagate/domain/OpsBillingApi"
import { Company, Email, IssuedKey, LinkMethod, NumberLink, StoragePolicySettings } from "@wagate/domain/OpsApi"
import { Storage } from "@wagate/domain/Storage"
import { ResendResult, Webhook, WebhookDelivery } from "@wagate/domain/Webhook"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"

/** The signed-in customer of a cabinet request. */
export interface CabinetUser {
  readonly accountId: AccountId
  readonly email: string
  readonly company: string
  readonly csrf: string
  /** SHA-256 of the session id (to end this session, or keep it when ending the others). */
  readonly sessionHash: Buffer
}
export class CurrentCabinetUser extends Context.Tag("@wagate/cabinet/CurrentCabinetUser")<CurrentCabinetUser, CabinetUser>() {}

/** Session cookie and CSRF token of signed-in calls. */
export class CabinetSession extends HttpApiMiddleware.Tag<CabinetSession>()("CabinetSession", {
  failure: Schema.Union(E.wire(E.NotSignedIn), E.wire(E.CsrfRejected)),
  provides: CurrentCabinetUser
}) {}

/** The CSRF token of calls made before signing in (double submit of the `wagate_csrf` cookie). */
export class CabinetCsrf extends HttpApiMiddleware.Tag<CabinetCsrf>()("CabinetCsrf", {
  failure: E.wire(E.CsrfRejected)
}) {}

/**
 * A refusal that says the rule only: the value refused is a password or a token, never to be
 * echoed back (a schema's own message quotes it).
 */
const secretText = (rule: string) => Schema.String.annotations({ message: () => rule })
const atMost = (n: number) => ({ message: () => `at most ${n} characters` })

/** Passwords: 10 to 200 characters; long passphrases welcome. */
export const Password = secretText("text of 10 to 200 characters").pipe(
  Schema.minLength(10, { message: () => "at least 10 characters" }),
  Schema.maxLength(200, atMost(200))
)
/** A password typed to sign in or to confirm a change: checked, never described back. */
const GivenPassword = secretText("text of at most 200 characters").pipe(Schema.maxLength(200, atMost(200)))
const Token = secretText("not a valid link").pipe(
  Schema.minLength(10, { message: () => "not a valid link" }),
  Schema.maxLength(200, { message: () => "not a valid link" })
)

export const Accepted = Schema.Struct({ message: Schema.String })
export const SignedIn = Schema.Struct({ account_id: Schema.Int, email: Schema.String, csrf: Schema.String })

export class CabinetAuthGroup extends HttpApiGroup.make("cabinetAuth")
  .add(
    HttpApiEndpoint.post("signUp", "/signup")
      .setPayload(Schema.Struct({ email: Email, company: Company, password: Password }))
      .addSuccess(Accepted, { status: 202 })
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.RateLimited))
  )
  .add(
    HttpApiEndpoint.post("confirm", "/confirm")
      .setPayload(Schema.Struct({ token: Token }))
      .addSuccess(SignedIn)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.post("logIn", "/login")
      .setPayload(Schema.Struct({ email: Schema.String.pipe(Schema.maxLength(254)), password: GivenPassword }))
      .addSuccess(SignedIn)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidCredentials))
      .addError(E.wire(E.RateLimited))
  )
  .add(
    HttpApiEndpoint.post("requestReset", "/reset")
      .setPayload(Schema.Struct({ email: Schema.String.pipe(Schema.maxLength(254)) }))
      .addSuccess(Accepted, { status: 202 })
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.RateLimited))
  )
  .add(
    HttpApiEndpoint.post("reset", "/reset/confirm")
      .setPayload(Schema.Struct({ token: Token, password: Password }))
      .addSuccess(SignedIn)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .middleware(CabinetCsrf)
  .prefix("/cabinet/api")
{}

export const KeyListing = Schema.Struct({
  id: Schema.Int,
  prefix: Schema.String,
  number_id: Schema.NullOr(Schema.Int),
  number_phone: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  last_used_at: Schema.NullOr(Schema.String)
})

export const NumberView = Schema.Struct({
  ...LinkedNumber.fields,
  reason: Schema.NullOr(Schema.String),
  restricted_until: Schema.NullOr(Schema.String),
  restriction_reason: Schema.NullOr(Schema.String)
})

export class CabinetGroup extends HttpApiGroup.make("cabinet")
  .add(
    HttpApiEndpoint.get("me", "/me").addSuccess(Schema.Struct({
      account_id: Schema.Int,
      email: Schema.String,
      company: Schema.String,
      csrf: Schema.String,
      payments: Schema.Boolean
    }))
  )
  .add(HttpApiEndpoint.post("logOut", "/logout").addSuccess(Accepted))
  .add(
    HttpApiEndpoint.post("changePassword", "/password")
      .setPayload(Schema.Struct({ current: GivenPassword, password: Password }))
      .addSuccess(Accepted)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidCredentials))
  )
  .add(
    HttpApiEndpoint.get("balance", "/balance").addSuccess(Schema.Struct({
      balance: Balance,
      paid_until: Schema.NullOr(Schema.String),
      /** KZT a top-up must bring for the numbers paused for the balance to resume (0: none wait). */
      to_resume: Schema.Number,
      number_day: Schema.Number,
      entries: Schema.Array(LedgerEntry)
    }))
  )
  .add(
    HttpApiEndpoint.post("topUp", "/balance/top-up")
      .setPayload(Schema.Struct({ amount: Schema.Number.pipe(Schema.int(), Schema.between(100, 10_000_000)).annotations({
        message: () => ({ message: "a whole number of KZT from 100 to 10000000", override: true })
      }) }))
      .addSuccess(Schema.Struct({ payment_id: Schema.String, credited: Schema.Boolean, balance: Balance }))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotImplemented))
  )
  .add(
    HttpApiEndpoint.get("numbers", "/numbers").addSuccess(Schema.Struct({ numbers: Schema.Array(NumberView), limit: Schema.Int }))
  )
  .add(
    // Server-sent events: a `numbers` event with the whole list ({numbers, limit}) each time a
    // number's status, reason or pause changes.
    HttpApiEndpoint.get("numbersEvents", "/numbers/events").addSuccess(HttpApiSchema.Text({ contentType: "text/event-stream" }))
  )
  .add(
    HttpApiEndpoint.post("addNumber", "/numbers")
      .setPayload(Schema.Struct({ phone: Schema.String.pipe(Schema.maxLength(32)), method: Schema.optional(LinkMethod) }))
      .addSuccess(Schema.Struct({ number: LinkedNumber, link: NumberLink }), { status: 201 })
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.PhoneTaken))
      .addError(E.wire(E.NumbersLimit))
      .addError(E.wire(E.InsufficientBalance))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.get("linkStatus")`/numbers/${id}/link`
      .addSuccess(NumberLink)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.post("link")`/numbers/${id}/link`
      .setPayload(OptionalBody(Schema.Struct({ method: Schema.optional(LinkMethod) })))
      .addSuccess(NumberLink)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.post("unlink")`/numbers/${id}/unlink`
      .addSuccess(NumberLink)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    // Server-sent events: `link` events with the NumberLink each time it changes.
    HttpApiEndpoint.get("linkEvents")`/numbers/${id}/events`
      .addSuccess(HttpApiSchema.Text({ contentType: "text/event-stream" }))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NumberNotFound))
  )
  .add(HttpApiEndpoint.get("keys", "/keys").addSuccess(Schema.Struct({ keys: Schema.Array(KeyListing) })))
  .add(
    HttpApiEndpoint.post("issueKey", "/keys")
      .setPayload(OptionalBody(Schema.Struct({ number_id: Schema.optional(Schema.Int.pipe(Schema.positive())) })))
      .addSuccess(IssuedKey, { status: 201 })
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NumberNotFound))
  )
  .add(
    HttpApiEndpoint.post("reissueKey")`/keys/${id}/reissue`
      .addSuccess(IssuedKey, { status: 201 })
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.get("webhook", "/webhook")
      .addSuccess(Schema.Struct({ webhook: Schema.NullOr(Webhook), deliveries: Schema.Array(WebhookDelivery) }))
  )
  .add(
    HttpApiEndpoint.put("setWebhook", "/webhook")
      .setPayload(Schema.Struct({ url: Schema.String.pipe(Schema.maxLength(2048, atMost(2048))), enabled: Schema.optional(Schema.Boolean) }))
      .addSuccess(Webhook)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.post("rotateSecret", "/webhook/rotate-secret")
      .addSuccess(Webhook)
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.post("testWebhook", "/webhook/test")
      .addSuccess(Accepted, { status: 202 })
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.post("resend", "/webhook/resend")
      .setPayload(Schema.Struct({ event_id: Schema.Int.pipe(Schema.positive()) }))
      .addSuccess(ResendResult)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.get("limits")`/numbers/${id}/limits`
      .addSuccess(Schema.Struct({ ...Limits.fields, factors: TrustFactors }))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.FromRequired))
      .addError(E.wire(E.NoNumbers))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.get("messages", "/messages")
      .setUrlParams(Schema.Struct({
        number: Schema.optional(IdParam),
        before: Schema.optional(Before("messages"))
      }))
      .addSuccess(MessagePage)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NumberNotFound))
  )
  .add(HttpApiEndpoint.get("storage", "/storage").addSuccess(Storage))
  .add(
    HttpApiEndpoint.put("setStoragePolicy", "/storage/policy")
      .setPayload(Schema.partial(StoragePolicySettings))
      .addSuccess(StoragePolicySettings)
      .addError(E.wire(E.InvalidParam))
  )
  .add(HttpApiEndpoint.get("exports", "/exports").addSuccess(ExportList))
  .add(
    HttpApiEndpoint.get("exportLink")`/exports/${id}`
      .addSuccess(ArchiveExport)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.StorageUnavailable))
  )
  .add(
    HttpApiEndpoint.post("createExport", "/exports")
      .setPayload(OptionalBody(Schema.Struct({
        number: Schema.optional(Schema.Int.pipe(Schema.positive())),
        include_media: Schema.optional(Schema.Boolean)
      })))
      .addSuccess(ArchiveExport, { status: 202 })
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.ExportBusy))
      .addError(E.wire(E.ExportLimit))
      .addError(E.wire(E.StorageUnavailable))
  )
  .middleware(CabinetSession)
  .prefix("/cabinet/api")
{}

export class CabinetApi extends HttpApi.make("wagate-cabinet").add(CabinetAuthGroup).add(CabinetGroup) {}
