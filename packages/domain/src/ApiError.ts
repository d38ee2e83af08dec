/**
 * Every public error of the contract: one tagged class per spec error code, carrying its HTTP
 * status. The same classes travel through entity RPCs (tagged) and leave the HTTP API as the
 * spec's body `{error, code}` (see {@link wire}).
 *
 * @since 1.0.0
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Almaty from "./Almaty.js"
import type { PauseReason } from "./Drawdown.js"

/** @since 1.0.0 */
export const ApiErrorTypeId: unique symbol = Symbol.for("@wagate/domain/ApiError")

/**
 * What every API error carries: the spec code and HTTP status, a human description, and for
 * limits the number of seconds after which a retry can succeed (sent as `Retry-After`, never in
 * the body).
 *
 * @since 1.0.0
 */
export interface ApiError {
  readonly [ApiErrorTypeId]: typeof ApiErrorTypeId
  readonly _tag: string
  readonly code: string
  readonly status: number
  readonly error: string
  readonly retryAfter?: number | undefined
  readonly quota?: Quota | undefined
}

/**
 * A number's daily allowance as the `X-RateLimit-*` headers report it: the limit (trust-index
 * multiplier included), what is left today, and the unix time (seconds) of the next midnight
 * in Almaty.
 *
 * @since 1.0.0
 */
export const Quota = Schema.Struct({
  limit: Schema.Int,
  remaining: Schema.Int,
  reset: Schema.Int
})
/** @since 1.0.0 */
export type Quota = typeof Quota.Type

/**
 * A daily allowance of `limit` with `used` taken, at `now`: what is left, and the Almaty midnight
 * that resets it.
 *
 * @since 1.0.0
 */
export const quotaAt = (now: number, limit: number, used: number): Quota => ({
  limit,
  remaining: Math.max(0, limit - used),
  reset: Math.floor(Almaty.nextMidnight(now) / 1000)
})

/** @since 1.0.0 */
export const isApiError = (u: unknown): u is ApiError => Predicate.hasProperty(u, ApiErrorTypeId)

const fields = (message: string) => ({
  error: Schema.optionalWith(Schema.String, { default: () => message }),
  retryAfter: Schema.optional(Schema.Number),
  quota: Schema.optional(Quota)
})

type Fields = ReturnType<typeof fields>

/**
 * `Schema.TaggedError` as it types for a concrete `Self`: its check that `Self` was given is a
 * conditional type that cannot resolve inside the generic `make` below.
 */
const taggedError = <Self>() =>
  Schema.TaggedError<Self>() as <Tag extends string, F extends Schema.Struct.Fields>(
    tag: Tag,
    fields: F,
    annotations?: Schema.Annotations.Schema<Self>
  ) => Schema.TaggedErrorClass<Self, Tag, { readonly _tag: Schema.tag<Tag> } & F>

const make = <Self>() =>
<const Tag extends string, const Code extends string, const Status extends number>(
  tag: Tag,
  code: Code,
  status: Status,
  message: string
) => {
  const Base: Schema.TaggedErrorClass<Self, Tag, { readonly _tag: Schema.tag<Tag> } & Fields> = taggedError<Self>()(
    tag,
    fields(message),
    HttpApiSchema.annotations({ status })
  )
  return class extends Base {
    static readonly code: Code = code
    static readonly status: Status = status
    readonly [ApiErrorTypeId]: typeof ApiErrorTypeId = ApiErrorTypeId
    get code(): Code {
      return code
    }
    get status(): Status {
      return status
    }
    override get message(): string {
      return this.error
    }
  }
}

// 400

/** @since 1.0.0 */
export class InvalidJson extends make<InvalidJson>()("InvalidJson", "invalid_json", 400, "Request body is not valid JSON") {}
/** @since 1.0.0 */
export class InvalidTo extends make<InvalidTo>()(
  "InvalidTo",
  "invalid_to",
  400,
  "Recipient must be a phone number in international format, digits only"
) {}
/** @since 1.0.0 */
export class EmptyText extends make<EmptyText>()("EmptyText", "empty_text", 400, "Message text is empty") {}
/** @since 1.0.0 */
export class TextTooLong extends make<TextTooLong>()("TextTooLong", "text_too_long", 400, "Message text is too long") {}
/** @since 1.0.0 */
export class InvalidMedia extends make<InvalidMedia>()("InvalidMedia", "invalid_media", 400, "Attachment is not valid") {}
/** @since 1.0.0 */
export class MediaTooLarge extends make<MediaTooLarge>()("MediaTooLarge", "media_too_large", 400, "Attachment is too large") {}
/** @since 1.0.0 */
export class MediaFetchFailed extends make<MediaFetchFailed>()(
  "MediaFetchFailed",
  "media_fetch_failed",
  400,
  "Attachment URL could not be fetched"
) {}
/** @since 1.0.0 */
export class InvalidFrom extends make<InvalidFrom>()(
  "InvalidFrom",
  "invalid_from",
  400,
  "from must be a number id or a phone number of the account"
) {}
/** @since 1.0.0 */
export class FromRequired extends make<FromRequired>()(
  "FromRequired",
  "from_required",
  400,
  "The account has several numbers: choose one with from"
) {}
/** @since 1.0.0 */
export class InvalidParam extends make<InvalidParam>()("InvalidParam", "invalid_param", 400, "Invalid parameter") {}

// 401 / 402 / 403

/** @since 1.0.0 */
export class Unauthorized extends make<Unauthorized>()(
  "Unauthorized",
  "unauthorized",
  401,
  "API key required: send Authorization: Bearer <key> or X-API-Key: <key>"
) {}
/** @since 1.0.0 */
export class InvalidKey extends make<InvalidKey>()("InvalidKey", "invalid_key", 401, "API key is not valid") {}
/** @since 1.0.0 */
export class NumberPaused extends make<NumberPaused>()(
  "NumberPaused",
  "number_paused",
  402,
  "The number is paused"
) {
  /** The refusal of a number paused for `reason`, saying why when the reason is known. */
  static because(reason: PauseReason | null): NumberPaused {
    return new NumberPaused(reason === null ? {} : { error: pausedBecause[reason] })
  }
}
const pausedBecause: Record<PauseReason, string> = {
  balance: "The number is paused: the balance has run out",
  operator: "The number is paused by the operator"
}
/**
 * The balance does not cover what was asked (a new number's first day, a refund). Operator API.
 *
 * @since 1.0.0
 */
export class InsufficientBalance extends make<InsufficientBalance>()(
  "InsufficientBalance",
  "insufficient_balance",
  402,
  "The balance does not cover this: top up first"
) {}
/**
 * A payment webhook that is not the provider's (bad, missing or stale signature). It credits
 * nothing.
 *
 * @since 1.0.0
 */
export class InvalidSignature extends make<InvalidSignature>()(
  "InvalidSignature",
  "invalid_signature",
  400,
  "The payment notification is not signed by the provider"
) {}
/** @since 1.0.0 */
export class ForbiddenForNumberKey extends make<ForbiddenForNumberKey>()(
  "ForbiddenForNumberKey",
  "forbidden_for_number_key",
  403,
  "This endpoint needs an account key; a number key cannot use it"
) {}

// 404 / 409

/** @since 1.0.0 */
export class NumberNotFound extends make<NumberNotFound>()(
  "NumberNotFound",
  "number_not_found",
  404,
  "Number not found in this account"
) {}
/** @since 1.0.0 */
export class NotFound extends make<NotFound>()("NotFound", "not_found", 404, "Not found") {}
/** @since 1.0.0 */
export class NoNumbers extends make<NoNumbers>()("NoNumbers", "no_numbers", 409, "The account has no numbers yet") {}
/** @since 1.0.0 */
export class NotConnected extends make<NotConnected>()("NotConnected", "not_connected", 409, "The number is not connected") {}

// 429

/** @since 1.0.0 */
export class RateLimited extends make<RateLimited>()("RateLimited", "rate_limited", 429, "Too many requests") {}
/** @since 1.0.0 */
export class DailyLimit extends make<DailyLimit>()(
  "DailyLimit",
  "daily_limit",
  429,
  "Daily message limit of the number reached"
) {}
/** @since 1.0.0 */
export class NewContactsLimit extends make<NewContactsLimit>()(
  "NewContactsLimit",
  "new_contacts_limit",
  429,
  "Daily limit of first messages to new people reached"
) {}
/** @since 1.0.0 */
export class ColdBlocked extends make<ColdBlocked>()(
  "ColdBlocked",
  "cold_blocked",
  429,
  "First messages to new people are suspended"
) {}
/** @since 1.0.0 */
export class SpamDetected extends make<SpamDetected>()(
  "SpamDetected",
  "spam_detected",
  429,
  "Mailing pattern detected: first messages to new people are suspended for 24 hours"
) {}
/** @since 1.0.0 */
export class AttachmentsBusy extends make<AttachmentsBusy>()(
  "AttachmentsBusy",
  "attachments_busy",
  429,
  "Two attachments are already being sent for this account"
) {}
/** @since 1.0.0 */
export class KeyRateLimited extends make<KeyRateLimited>()(
  "KeyRateLimited",
  "key_rate_limited",
  429,
  "More than 3000 requests a minute on this key"
) {}
/** @since 1.0.0 */
export class ExportBusy extends make<ExportBusy>()("ExportBusy", "export_busy", 429, "Two exports are already running") {}
/** @since 1.0.0 */
export class ExportLimit extends make<ExportLimit>()("ExportLimit", "export_limit", 429, "10 exports a day reached") {}

// 5xx

/** @since 1.0.0 */
export class SendFailed extends make<SendFailed>()("SendFailed", "send_failed", 502, "The network did not accept the message") {}
/** @since 1.0.0 */
export class Capacity extends make<Capacity>()("Capacity", "capacity", 503, "The number is temporarily unavailable") {}
/** @since 1.0.0 */
export class Busy extends make<Busy>()("Busy", "busy", 503, "The server is receiving many large files") {}
/** @since 1.0.0 */
export class StorageUnavailable extends make<StorageUnavailable>()(
  "StorageUnavailable",
  "storage_unavailable",
  503,
  "Storage is unavailable or not connected"
) {}

// Operator API (provisioning)

/** @since 1.0.0 */
export class EmailTaken extends make<EmailTaken>()("EmailTaken", "email_taken", 409, "An account with this email exists") {}
/** @since 1.0.0 */
export class PhoneTaken extends make<PhoneTaken>()("PhoneTaken", "phone_taken", 409, "This phone is already linked") {}
/** @since 1.0.0 */
export class NumbersLimit extends make<NumbersLimit>()(
  "NumbersLimit",
  "numbers_limit",
  409,
  "The account holds as many numbers as it may"
) {}

// Answers of the HTTP layer itself, beyond the spec's table (see docs/errors.md)

/** @since 1.0.0 */
export class MethodNotAllowed extends make<MethodNotAllowed>()(
  "MethodNotAllowed",
  "method_not_allowed",
  405,
  "Method not allowed on this path"
) {}
/** @since 1.0.0 */
export class BadRequest extends make<BadRequest>()(
  "BadRequest",
  "bad_request",
  400,
  "The request is not valid HTTP"
) {}
/** @since 1.0.0 */
export class RequestTimeout extends make<RequestTimeout>()(
  "RequestTimeout",
  "request_timeout",
  408,
  "The request was not received in time"
) {}
/** @since 1.0.0 */
export class HeadersTooLarge extends make<HeadersTooLarge>()(
  "HeadersTooLarge",
  "headers_too_large",
  431,
  "The request line and headers are too large"
) {}
/** @since 1.0.0 */
export class PayloadTooLarge extends make<PayloadTooLarge>()(
  "PayloadTooLarge",
  "payload_too_large",
  413,
  "Request body is too large"
) {}
/** @since 1.0.0 */
export class NotImplemented extends make<NotImplemented>()(
  "NotImplemented",
  "not_implemented",
  501,
  "This endpoint of the contract is not served by this version yet"
) {}
// The customer cabinet (its own API under /cabinet/api, not in the public contract)

/** The cabinet request carries no live session. @since 1.0.0 */
export class NotSignedIn extends make<NotSignedIn>()("NotSignedIn", "not_signed_in", 401, "Sign in to the cabinet") {}
/** Wrong email or password; the same answer whichever of them is wrong. @since 1.0.0 */
export class InvalidCredentials extends make<InvalidCredentials>()(
  "InvalidCredentials",
  "invalid_credentials",
  401,
  "Wrong email or password"
) {}
/** A state change without the page's CSRF token, or from another site. @since 1.0.0 */
export class CsrfRejected extends make<CsrfRejected>()(
  "CsrfRejected",
  "csrf_rejected",
  403,
  "The request did not come from a cabinet page; reload the page and try again"
) {}

/** @since 1.0.0 */
export class InternalError extends make<InternalError>()("InternalError", "internal_error", 500, "Internal error") {}

/**
 * A class of {@link ApiError}.
 *
 * @since 1.0.0
 */
export interface ApiErrorClass<E extends ApiError = ApiError> extends Schema.Schema<E, any> {
  readonly code: E["code"]
  readonly status: number
  new(props: { readonly error?: string; readonly retryAfter?: number | undefined; readonly quota?: Quota | undefined }): E
}

const wires = new Map<ApiErrorClass<any>, Schema.Schema<any, any>>()

/**
 * The HTTP form of an error: the body `{error, code}` and the class' status. The HTTP contract
 * declares errors through this schema, so the OpenAPI document and the typed client see exactly
 * what the server sends.
 *
 * @since 1.0.0
 */
export const wire = <E extends ApiError>(
  self: ApiErrorClass<E>
): Schema.Schema<E, { readonly error: string; readonly code: E["code"] }> => {
  const cached = wires.get(self)
  if (cached) return cached
  const sample = new self({})
  const schema = Schema.transform(
    Schema.Struct({ error: Schema.String, code: Schema.Literal(self.code) }),
    self as Schema.Schema<E, any>,
    {
      strict: false,
      decode: ({ error }) => ({ _tag: sample._tag, error }),
      encode: (e: E) => ({ error: e.error, code: self.code })
    }
  ).annotations({
    identifier: sample._tag,
    description: sample.error,
    ...HttpApiSchema.annotations({ status: self.status })
  })
  wires.set(self, schema)
  return schema
}
