/** The cabinet's language choice and its two dictionaries. */
import { assert, describe, it } from "@effect/vitest"
import * as ApiError from "@wagate/domain/ApiError"
import { dictionary, negotiate } from "../src/I18n.js"
import { dictionaryScript } from "../src/Pages.js"

/** Every error code the gateway answers with: each error class of the domain carries its code. */
const codes = Object.values(ApiError).flatMap((value) =>
  typeof value === "function" && "code" in value && typeof value.code === "string" ? [value.code] : []
)

describe("I18n", () => {
  it("takes the switch first, then Accept-Language by quality; Kazakh reads Russian; English otherwise", () => {
    const cases: ReadonlyArray<[string | undefined, string | undefined, string]> = [
      ["en", "ru-RU,ru;q=0.9", "en"],
      ["ru", undefined, "ru"],
      [undefined, "ru-RU,ru;q=0.9,en;q=0.8", "ru"],
      [undefined, "de-DE,en;q=0.5,ru;q=0.7", "ru"],
      [undefined, "kk-KZ", "ru"],
      [undefined, "fr", "en"],
      [undefined, undefined, "en"],
      ["xx", "en;q=0, ru;q=0.1", "ru"]
    ]
    for (const [chosen, accept, expected] of cases) assert.strictEqual(negotiate(chosen, accept), expected, `${chosen} / ${accept}`)
  })

  it("both languages have every word, and no two languages share a page's text by mistake", () => {
    const en = dictionary("en")
    const ru = dictionary("ru")
    assert.deepStrictEqual(Object.keys(en), Object.keys(ru))
    for (const key of Object.keys(en)) {
      assert.ok(en[key].length > 0 && ru[key].length > 0, key)
      if (key !== "welcome.kk") assert.notStrictEqual(en[key], ru[key], key)
      // Placeholders match, so a value filled in by the script appears in either language.
      assert.deepStrictEqual(en[key].match(/\{\w+\}/g)?.sort() ?? [], ru[key].match(/\{\w+\}/g)?.sort() ?? [], key)
    }
  })

  it("the Russian page says every error code in Russian: its words script has a text for each", () => {
    assert.isAtLeast(codes.length, 40)
    // The script the Russian pages load, as they load it.
    const words: Record<string, string> = JSON.parse(dictionaryScript("ru").replace(/^window\.WAGATE_T=|;\n$/g, ""))
    const missing = codes.filter((code) => !/[а-яё]/i.test(words[`err.${code}`] ?? ""))
    assert.deepStrictEqual(missing, [], "error codes without a Russian text (err.<code> in I18n.ts)")
  })
})
