/**
 * The cabinet's pages. Each is a small server-rendered shell (header, menu, language switch,
 * title and CSRF token) around a `<main>` that the one script, cabinet.js, fills
 * from the cabinet API, with the words of the page's language from i18n-<lang>.js. No framework
 * and no build step: the files under `assets/` are served as they are.
 */
import { dictionary, type Key, type Lang, LANGS, t } from "./I18n.js"

export const BASE = "/cabinet"

export interface PageDef {
  readonly path: string
  readonly page: string
  readonly title: Key
  /** Shown in the menu of signed-in pages. */
  readonly menu?: Key | undefined
  readonly signedIn: boolean
}

export const PAGES: ReadonlyArray<PageDef> = [
  { path: "/login", page: "login", title: "title.login", signedIn: false },
  { path: "/signup", page: "signup", title: "title.signup", signedIn: false },
  { path: "/confirm", page: "confirm", title: "title.confirm", signedIn: false },
  { path: "/reset", page: "reset", title: "title.reset", signedIn: false },
  { path: "/reset/new", page: "resetNew", title: "title.resetNew", signedIn: false },
  { path: "/balance", page: "balance", title: "title.balance", menu: "nav.balance", signedIn: true },
  { path: "/numbers", page: "numbers", title: "title.numbers", menu: "nav.numbers", signedIn: true },
  { path: "/link", page: "link", title: "title.link", signedIn: true },
  { path: "/keys", page: "keys", title: "title.keys", menu: "nav.keys", signedIn: true },
  { path: "/webhook", page: "webhook", title: "title.webhook", menu: "nav.webhook", signedIn: true },
  { path: "/limits", page: "limits", title: "title.limits", menu: "nav.limits", signedIn: true },
  { path: "/history", page: "history", title: "title.history", menu: "nav.history", signedIn: true },
  { path: "/storage", page: "storage", title: "title.storage", menu: "nav.storage", signedIn: true },
  { path: "/exports", page: "exports", title: "title.exports", menu: "nav.exports", signedIn: true },
  { path: "/account", page: "account", title: "title.account", menu: "nav.account", signedIn: true }
]

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

/** JSON inside a <script> element: nothing in it may close the element. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, "\\u003c")

/** Words only the shell above uses: the script is not sent them (every byte counts on a phone). */
const shellOnly = (key: string) =>
  key.startsWith("title.") || (key.startsWith("nav.") && key !== "nav.limits") ||
  ["brand", "welcome", "lang.switch", "noscript", "loading"].includes(key)

/** The words of a language as a script (cached like the other assets): it sets `WAGATE_T`. */
export const dictionaryScript = (lang: Lang) =>
  `window.WAGATE_T=${scriptJson(Object.fromEntries(Object.entries(dictionary(lang)).filter(([key]) => !shellOnly(key))))};\n`

export const render = (
  def: PageDef,
  input: { readonly lang: Lang; readonly csrf: string; readonly version: string; readonly wordsVersion: string }
) => {
  const { lang } = input
  const menu = def.signedIn
    ? `<nav aria-label="${esc(t(lang, "nav.menu"))}"><ul>${
      PAGES.filter((p) => p.menu !== undefined).map((p) =>
        `<li><a href="${BASE}${p.path}"${p === def ? " aria-current=\"page\"" : ""}>${esc(t(lang, p.menu!))}</a></li>`
      ).join("")
    }<li><button type="button" id="logout" class="link">${esc(t(lang, "nav.logout"))}</button></li></ul></nav>`
    : ""
  const switcher = LANGS.map((l) =>
    l === lang
      ? `<span aria-current="true">${l.toUpperCase()}</span>`
      : `<a href="?lang=${l}" hreflang="${l}" lang="${l}">${l.toUpperCase()}</a>`
  ).join(" ")
  return `<!doctype html>
<html lang="${lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(t(lang, def.title))} · ${esc(t(lang, "brand"))}</title>
<meta name="csrf-token" content="${esc(input.csrf)}">
<link rel="stylesheet" href="${BASE}/assets/cabinet.css?v=${input.version}">
<script src="${BASE}/assets/i18n-${lang}.js?v=${input.wordsVersion}" defer></script>
<script src="${BASE}/assets/cabinet.js?v=${input.version}" defer></script>
</head><body data-page="${def.page}" data-signed-in="${def.signedIn}">
<header><a class="brand" href="${BASE}/">${esc(t(lang, "brand"))}</a>
<p class="lang" aria-label="${esc(t(lang, "lang.switch"))}">${switcher}</p>${menu}</header>
<main id="main"><h1>${esc(t(lang, def.title))}</h1>
<div id="app" aria-live="polite"><p>${esc(t(lang, "loading"))}</p></div>
<noscript><p>${esc(t(lang, "noscript"))}</p></noscript></main>
</body></html>`
}
