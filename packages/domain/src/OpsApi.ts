/**
 * The operator API under `/ops/v1`: provisioning accounts, numbers, money and keys. It is what
 * the `wagate` CLI (and later the cabinet) calls, with the operator token; it is not part of the
 * public contract and not in its OpenAPI document.
 *
 * @since 1.0.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as Schema from "effect/Schema"
import { Balance } from "./Account.js"
import * as E from "./ApiError.js"
import { ClusterView } from "./ClusterView.js"
import { Phone, Timestamp } from "./Ids.js"
import { ConnectionStatus } from "./Connection.js"
import { LinkedNumber } from "./LinkedNumber.js"
import { Amount, Note, OpsBillingEndpoints } from "./OpsBillingApi.js"
import { id, OptionalBody } from "./api/Params.js"
import { SetWebhookRequest, Webhook } from "./Webhook.js"

/** @since 1.0.0 */
export class OperatorAuth extends HttpApiMiddleware.Tag<OperatorAuth>()("OperatorAuth", {
  failure: Schema.Union(E.wire(E.Unauthorized), E.wire(E.InvalidKey), E.wire(E.RateLimited)),
  security: { operator: HttpApiSecurity.bearer }
}) {}

/** @since 1.0.0 */
export const OpsAccount = Schema.Struct({
  id: Schema.Int,
  email: Schema.String,
  company: Schema.String,
  numbers_limit: Schema.Int,
  created_at: Timestamp
})

/** @since 1.0.0 */
export const KeyInfo = Schema.Struct({
  id: Schema.Int,
  prefix: Schema.String,
  number_id: Schema.NullOr(Schema.Int),
  created_at: Timestamp,
  revoked_at: Schema.NullOr(Timestamp)
})

/** A key as issued: the only time the whole key is shown. @since 1.0.0 */
export const IssuedKey = Schema.Struct({
  id: Schema.Int,
  key: Schema.String,
  prefix: Schema.String,
  account_id: Schema.Int,
  number_id: Schema.NullOr(Schema.Int)
})

/**
 * Where linking a number stands: the connection status and, while waiting for the phone, the
 * QR (its payload as text and as a PNG image) or the 8-character pairing code to enter on it.
 * Each QR refresh replaces both.
 *
 * @since 1.0.0
 */
export const NumberLink = Schema.Struct({
  number_id: Schema.Int,
  status: ConnectionStatus,
  qr: Schema.NullOr(Schema.String),
  qr_image: Schema.NullOr(Schema.String).annotations({ description: "The QR as a data:image/png;base64 URL" }),
  pairing_code: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String),
  /** The last fault inside the number's entity (a request that failed on it), on the link view. */
  fault: Schema.optional(Schema.NullOr(Schema.Struct({ error: Schema.String, at: Schema.String })))
})
/** @since 1.0.0 */
export type NumberLink = typeof NumberLink.Type

/** @since 1.0.0 */
export const LinkMethod = Schema.Literal("qr", "code").annotations({ description: "QR scan (default) or pairing code" })

/** The body of link and relink, which may be left out (a QR scan). @since 1.0.0 */
export const LinkBody = OptionalBody(Schema.Struct({ method: Schema.optional(LinkMethod) }))

/** @since 1.0.0 */
export const OpsAccountDetail = Schema.Struct({
  account: OpsAccount,
  numbers: Schema.Array(LinkedNumber),
  keys: Schema.Array(KeyInfo),
  balance: Balance
})

/** The longest company name an account keeps. @since 1.0.0 */
export const MAX_COMPANY_LENGTH = 200

/** A company name: not blank (it is stored trimmed), at most MAX_COMPANY_LENGTH characters. @since 1.0.0 */
export const Company = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0, { message: () => "Expected a company name, not an empty or blank one" }),
  Schema.maxLength(MAX_COMPANY_LENGTH, {
    message: (issue) => `Expected at most ${MAX_COMPANY_LENGTH} characters, actual ${String(issue.actual).length}`
  })
)

/** An e-mail address: one @, a dot in its domain, at most 254 characters (RFC 5321). @since 1.0.0 */
export const Email = Schema.String.pipe(
  Schema.maxLength(254, { message: (issue) => `Expected at most 254 characters, actual ${String(issue.actual).length}` }),
  Schema.pattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: () => "Expected an e-mail address" })
)

/** @since 1.0.0 */
export class OpsGroup extends HttpApiGroup.make("ops")
  .add(
    HttpApiEndpoint.post("createAccount", "/accounts")
      .setPayload(Schema.Struct({ email: Email, company: Company }))
      .addSuccess(OpsAccount, { status: 201 })
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.EmailTaken))
  )
  .add(
    HttpApiEndpoint.get("showAccount")`/accounts/${id}`
      .addSuccess(OpsAccountDetail)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.post("credit")`/accounts/${id}/credit`
      .setPayload(Schema.Struct({ amount: Amount, note: Schema.optional(Note) }))
      .addSuccess(Balance)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.post("addNumber")`/accounts/${id}/numbers`
      .setPayload(Schema.Struct({ phone: Phone, method: Schema.optional(LinkMethod) }))
      .addSuccess(Schema.Struct({ number: LinkedNumber, link: NumberLink }), { status: 201 })
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.PhoneTaken))
      .addError(E.wire(E.NumbersLimit))
      .addError(E.wire(E.InsufficientBalance))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.get("linkStatus")`/numbers/${id}/link`
      .addSuccess(NumberLink)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.post("link")`/numbers/${id}/link`
      .setPayload(LinkBody)
      .addSuccess(NumberLink)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    // Logs the device out (WhatsApp removes it from the phone) and deletes its credentials: STOPPED.
    HttpApiEndpoint.post("unlink")`/numbers/${id}/unlink`
      .addSuccess(NumberLink)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    // Unlink, then link anew with a new device identity (after 411, 403 or a lost phone).
    HttpApiEndpoint.post("relink")`/numbers/${id}/relink`
      .setPayload(LinkBody)
      .addSuccess(NumberLink)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.post("pause")`/numbers/${id}/pause`
      .setPayload(Schema.Struct({ paused: Schema.Boolean }))
      .addSuccess(LinkedNumber)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.post("issueKey", "/keys")
      .setPayload(Schema.Struct({
        account_id: Schema.Int.pipe(Schema.positive()),
        number_id: Schema.optional(Schema.Int.pipe(Schema.positive()))
      }))
      .addSuccess(IssuedKey, { status: 201 })
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.NumberNotFound))
  )
  .add(
    HttpApiEndpoint.post("reissueKey")`/keys/${id}/reissue`
      .addSuccess(IssuedKey, { status: 201 })
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    // A one-time link (1 hour) for the account's owner to set the cabinet password: for a
    // gateway without SMTP, or an account the operator made.
    HttpApiEndpoint.post("cabinetResetLink")`/accounts/${id}/cabinet-reset-link`
      .addSuccess(Schema.Struct({ url: Schema.String, expires_at: Timestamp }), { status: 201 })
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(HttpApiEndpoint.get("cluster", "/cluster").addSuccess(ClusterView))
  .add(
    // The process's metrics (e.g. wagate_zombie_restarts) in Prometheus' text format.
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/plain; version=0.0.4; charset=utf-8" }).annotations({
        description: "Prometheus text exposition format 0.0.4"
      }))
  )
  .middleware(OperatorAuth)
  .prefix("/ops/v1")
{}

/**
 * What `POST /ops/v1/webhook-secrets/reseal` did: secrets sealed again with the current key
 * (`key`, its id), and endpoints whose secrets no key of the process opens.
 *
 * @since 1.0.0
 */
export const ResealedSecrets = Schema.Struct({
  resealed: Schema.Int,
  unreadable: Schema.Int,
  key: Schema.String
}).annotations({ identifier: "ResealedSecrets" })

/**
 * An account's webhook, set by the operator (the CLI's `webhook set` / `webhook show`): the same
 * rules and answers as the account's own `/api/v1/webhook`.
 *
 * @since 1.0.0
 */
export class OpsWebhooksGroup extends HttpApiGroup.make("opsWebhooks")
  .add(
    HttpApiEndpoint.get("show")`/accounts/${id}/webhook`
      .addSuccess(Webhook)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.put("set")`/accounts/${id}/webhook`
      .setPayload(SetWebhookRequest)
      .addSuccess(Webhook)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.post("rotateSecret")`/accounts/${id}/webhook/rotate-secret`
      .addSuccess(Webhook)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
  )
  .add(
    HttpApiEndpoint.post("resealSecrets")`/webhook-secrets/reseal`
      .addSuccess(ResealedSecrets)
  )
  .middleware(OperatorAuth)
  .prefix("/ops/v1")
{}

/**
 * The storage policy of an account (see docs/storage.md): what is shown in GET /storage's
 * `policy`, `ceiling_bytes` and `retention_days`.
 *
 * @since 1.0.0
 */
export const StoragePolicySettings = Schema.Struct({
  skip_groups: Schema.Boolean,
  skip_unknown: Schema.Boolean,
  unknown_max_mb: Schema.NullOr(Schema.Int.pipe(Schema.positive())),
  chat_daily_mb: Schema.NullOr(Schema.Int.pipe(Schema.positive())),
  ceiling_bytes: Schema.NullOr(Schema.Int.pipe(Schema.positive())),
  retention_days: Schema.NullOr(Schema.Int.pipe(Schema.between(1, 3650)))
}).annotations({ identifier: "StoragePolicySettings" })

/**
 * An account's storage policy, set by the operator: a PUT changes the fields it names and keeps
 * the others.
 *
 * @since 1.0.0
 */
export class OpsStorageGroup extends HttpApiGroup.make("opsStorage")
  .add(
    HttpApiEndpoint.get("showPolicy")`/accounts/${id}/storage-policy`
      .addSuccess(StoragePolicySettings)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.put("setPolicy")`/accounts/${id}/storage-policy`
      .setPayload(Schema.partial(StoragePolicySettings))
      .addSuccess(StoragePolicySettings)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .middleware(OperatorAuth)
  .prefix("/ops/v1")
{}

/** @since 1.0.0 */
/** Money: ledger, refunds, test payments, the drawdown by hand (see OpsBillingApi). @since 1.0.0 */
export class OpsBillingGroup extends OpsBillingEndpoints.middleware(OperatorAuth).prefix("/ops/v1") {}

/** @since 1.0.0 */
export class OpsApi extends HttpApi.make("wagate-ops")
  .add(OpsGroup)
  .add(OpsWebhooksGroup)
  .add(OpsStorageGroup)
  .add(OpsBillingGroup)
{}
