/**
 * Query and path parameters, and the optional body, shared by the groups of the HTTP contract.
 *
 * @since 1.0.0
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** @since 1.0.0 */
export const FromParam = Schema.String.annotations({
  description: "Account number: its id from GET /numbers, or its phone (digits). Omitted: all numbers of the key."
})

/** @since 1.0.0 */
export const TimeParam = (description: string) =>
  Schema.String.annotations({ description: `${description}: a date (2026-11-21), ISO 8601 time or unix seconds` })

/**
 * A whole number from `min` to `max` in a path or query parameter, written the one way people
 * write it: decimal digits, a minus sign only when `min` is negative, no leading zero, no
 * space, within the safe integer range. (`Schema.NumberFromString` is JavaScript's `Number()`,
 * which also reads `0x10` as 16, `1e3` as 1000 and `012` as 12.) A refusal reads, after the
 * parameter's name, `must be a whole number from 1 to 500 in decimal digits, not "0x10"`.
 *
 * @since 1.0.0
 */
export const IntFromString = (min: number, max: number = Number.MAX_SAFE_INTEGER) => {
  const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`
  const refusal = (actual: unknown) => `must be a whole number ${range} in decimal digits, not ${JSON.stringify(actual)}`
  const digits = min < 0 ? /^(0|-?[1-9][0-9]*)$/ : /^(0|[1-9][0-9]*)$/
  return Schema.transformOrFail(
    Schema.String.pipe(Schema.pattern(digits, { message: (issue) => refusal(issue.actual) })),
    Schema.Int,
    {
      strict: true,
      decode: (text, _, ast) => {
        const n = Number(text)
        return Number.isSafeInteger(n) && n >= min && n <= max
          ? ParseResult.succeed(n)
          : ParseResult.fail(new ParseResult.Type(ast, text, refusal(text)))
      },
      encode: (n) => ParseResult.succeed(String(n))
    }
  )
}

/**
 * A yes-or-no query parameter: `1` or `true` for yes, `0` or `false` for no; `true` and `false`
 * also as `True`/`False` (Python's `requests` sends those) and `TRUE`/`FALSE`. It decodes to
 * `"1"` or `"0"`, the spec's own values. Anything else is refused, never read as either.
 *
 * @since 1.0.0
 */
export const FlagParam = Schema.transform(
  Schema.Literal("1", "0", "true", "false", "True", "False", "TRUE", "FALSE").annotations({
    message: (issue) => ({ message: `must be 1, 0, true or false, not ${JSON.stringify(issue.actual)}`, override: true })
  }),
  Schema.Literal("1", "0"),
  { strict: true, decode: (text) => (text === "1" || text.toLowerCase() === "true" ? "1" : "0"), encode: (flag) => flag }
)

/** @since 1.0.0 */
export const PageLimit = (max: number, byDefault: number) =>
  IntFromString(1, max).annotations({ description: `Page size, 1-${max}, default ${byDefault}` })

/** @since 1.0.0 */
export const Before = (what: string) => IntFromString(1).annotations({ description: `Only ${what} with a lower id` })

/** A positive id in a path (`/messages/{id}`). @since 1.0.0 */
export const IdParam = IntFromString(1).annotations({ description: "Integer id" })

/** The `{id}` path parameter. @since 1.0.0 */
export const id = HttpApiSchema.param("id", IdParam)

/**
 * The body of an endpoint whose fields are all optional, which may be left out: no body at all
 * (an empty body reads as JSON `null`) and `null` are `{}`.
 *
 * @since 1.0.0
 */
export const OptionalBody = <Fields extends Schema.Struct.Fields>(body: Schema.Struct<Fields>) =>
  Schema.transform(Schema.NullOr(body), Schema.typeSchema(body), {
    // `{}` is decoded by the body's own schema, so a body with a required field is never left out.
    strict: false,
    decode: (given) => given ?? {},
    encode: (given) => given
  })
