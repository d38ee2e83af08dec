/**
 * Column values as the PostgreSQL driver hands them over, as schemas: repositories decode their
 * rows through these (with `SqlSchema`), so a column that is not what the code expects fails at
 * the repository instead of reaching an API answer.
 *
 * The nullable columns, bigints and sets of names are single checks rather than unions: a union
 * tries its members one by one, and on the read paths (a page of GET /messages is 50 rows of 22
 * columns) that tripled the cost of decoding a row (docs/performance.md, "Row decoding").
 *
 * @since 1.0.0
 */
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

const nullOr = <A>(is: (u: unknown) => u is A, identifier: string) =>
  Schema.declare((u: unknown): u is A | null => u === null || is(u), { identifier })

const isString = (u: unknown): u is string => typeof u === "string"
const isNumber = (u: unknown): u is number => typeof u === "number"
const isDate = (u: unknown): u is Date => u instanceof Date && !Number.isNaN(u.getTime())

const toNumber = (u: unknown): number =>
  typeof u === "number" ? u : typeof u === "string" && u.trim() !== "" ? Number(u) : Number.NaN

/**
 * A bigint column or a count, as a number: the driver gives a string (a number for `int` casts);
 * ids and counts stay far below 2^53.
 *
 * @since 1.0.0
 */
export const Int8: Schema.Schema<number, string | number> = Schema.declare<number, string | number, readonly []>([], {
  decode: () => (u, _, ast) => {
    const n = toNumber(u)
    return Number.isFinite(n) ? ParseResult.succeed(n) : ParseResult.fail(new ParseResult.Type(ast, u))
  },
  encode: () => (u, _, ast) => isNumber(u) ? ParseResult.succeed(u) : ParseResult.fail(new ParseResult.Type(ast, u))
}, { identifier: "Int8" })

/** A nullable bigint column. @since 1.0.0 */
export const NullOrInt8: Schema.Schema<number | null, string | number | null> = Schema.declare<
  number | null,
  string | number | null,
  readonly []
>([], {
  decode: () => (u, _, ast) => {
    if (u === null) return ParseResult.succeed(null)
    const n = toNumber(u)
    return Number.isFinite(n) ? ParseResult.succeed(n) : ParseResult.fail(new ParseResult.Type(ast, u))
  },
  encode: () => (u, _, ast) =>
    u === null || isNumber(u) ? ParseResult.succeed(u) : ParseResult.fail(new ParseResult.Type(ast, u))
}, { identifier: "NullOrInt8" })

/** A timestamptz column. @since 1.0.0 */
export const Instant = Schema.DateFromSelf

/** A nullable timestamptz column. @since 1.0.0 */
export const NullOrInstant = nullOr(isDate, "NullOrInstant")

/** A nullable text column. @since 1.0.0 */
export const NullOrString = nullOr(isString, "NullOrString")

/** A nullable integer column. @since 1.0.0 */
export const NullOrInt = nullOr((u: unknown): u is number => Number.isInteger(u), "NullOrInt")

/**
 * A text column holding one of the names of a literal schema (a status, a kind), checked in one
 * look-up.
 *
 * @since 1.0.0
 */
export const oneOf = <const Names extends readonly [string, ...Array<string>]>(schema: Schema.Literal<Names>) => {
  const names = new Set<unknown>(schema.literals)
  return Schema.declare((u: unknown): u is Names[number] => names.has(u), {
    identifier: `oneOf(${schema.literals.join(", ")})`
  })
}

/** A nullable text column holding one of the names of a literal schema. @since 1.0.0 */
export const nullOrOneOf = <const Names extends readonly [string, ...Array<string>]>(schema: Schema.Literal<Names>) => {
  const names = new Set<unknown>(schema.literals)
  return nullOr((u: unknown): u is Names[number] => names.has(u), `nullOrOneOf(${schema.literals.join(", ")})`)
}
