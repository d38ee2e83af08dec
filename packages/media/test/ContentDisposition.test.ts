/**
 * The Content-Disposition header, RFC 6266 with RFC 8187 names.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ContentDisposition from "../src/ContentDisposition.js"

describe("ContentDisposition.format", () => {
  const cases: ReadonlyArray<readonly [ContentDisposition.Disposition, string | undefined, string]> = [
    ["inline", undefined, "inline"],
    ["attachment", undefined, "attachment"],
    ["attachment", "", "attachment"],
    ["attachment", "report.pdf", "attachment; filename=\"report.pdf\""],
    ["inline", "photo 1.jpg", "inline; filename=\"photo 1.jpg\""],
    [
      "attachment",
      "Отчёт.pdf",
      "attachment; filename=\"_____.pdf\"; filename*=UTF-8''%D0%9E%D1%82%D1%87%D1%91%D1%82.pdf"
    ],
    ["attachment", "naïve café.txt", "attachment; filename=\"na_ve caf_.txt\"; filename*=UTF-8''na%C3%AFve%20caf%C3%A9.txt"],
    ["attachment", "😀.png", "attachment; filename=\"_.png\"; filename*=UTF-8''%F0%9F%98%80.png"],
    // Quotes, backslashes, separators and control characters never reach the quoted string.
    ["attachment", "say \"hi\".txt", "attachment; filename=\"say _hi_.txt\"; filename*=UTF-8''say%20%22hi%22.txt"],
    ["attachment", "a\\b/c.txt", "attachment; filename=\"a_b_c.txt\"; filename*=UTF-8''a%5Cb%2Fc.txt"],
    ["attachment", "evil\r\nSet-Cookie: x", "attachment; filename=\"evil__Set-Cookie: x\"; filename*=UTF-8''evil%0D%0ASet-Cookie%3A%20x"],
    ["attachment", "100%.txt", "attachment; filename=\"100_.txt\"; filename*=UTF-8''100%25.txt"],
    // attr-char excludes ' ( ) *, which encodeURIComponent would leave bare.
    ["attachment", "it's (1)*.txt", "attachment; filename=\"it's (1)*.txt\""],
    ["attachment", "é's (1)*.txt", "attachment; filename=\"_'s (1)*.txt\"; filename*=UTF-8''%C3%A9%27s%20%281%29%2A.txt"],
    ["attachment", "broken\uD800.txt", "attachment; filename=\"broken_.txt\"; filename*=UTF-8''broken%EF%BF%BD.txt"]
  ]
  for (const [disposition, filename, expected] of cases) {
    it(`${disposition} ${JSON.stringify(filename)}`, () => {
      assert.strictEqual(ContentDisposition.format(disposition, filename), expected)
    })
  }
})
