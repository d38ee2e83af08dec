// The wagate cabinet: one plain script for every page (no framework, no build step). Each page's
// <main> is filled from the cabinet API (/cabinet/api); elements are built with textContent only,
// never from HTML strings, so nothing from the server can become markup.
"use strict";
(() => {
  const T = window.WAGATE_T || {};
  const t = (key, values) => (T[key] || key).replace(/\{(\w+)\}/g, (_, k) => (values && values[k] != null ? String(values[k]) : ""));
  const page = document.body.dataset.page;
  const app = document.getElementById("app");
  const query = new URLSearchParams(location.search);
  let csrf = document.querySelector('meta[name="csrf-token"]').content;
  const lang = document.documentElement.lang;

  // --- elements ---
  const h = (tag, attrs, ...children) => {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "text") el.textContent = v;
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) if (c != null && c !== false) el.append(c instanceof Node ? c : String(c));
    return el;
  };
  // A box drawn again keeps the keyboard's place: the control it was on (or on whose result),
  // drawn again, has the focus back, its result beside it; a table's region (by name), its scroll.
  const same = (el) => [el.localName, el.name, el.ariaLabel, el.href, el.matches(".scroll") || el.textContent].join();
  const fill = (box, nodes) => {
    let was = document.activeElement;
    const said = was.matches(".msg") ? was : was.nextElementSibling;
    if (said === was) was = was.previousElementSibling;
    const find = (old) => old && !old.isConnected && [...box.querySelectorAll(old.localName)].find((el) => same(el) === same(old));
    const scrolled = [...box.querySelectorAll(".scroll")].map((el) => [el, el.scrollLeft]);
    box.replaceChildren(...nodes);
    for (const [el, x] of scrolled) (find(el) || {}).scrollLeft = x;
    const again = find(was);
    if (!again) return;
    if (said && said.matches(".msg,.status")) again.after(said);
    again.focus();
  };
  const show = (...nodes) => fill(app, nodes.flat().filter(Boolean));
  const note = (kind, text) => h("p", { class: "msg " + kind, role: kind === "err" ? "alert" : "status" }, text);
  let fieldId = 0;
  const field = (label, attrs) => {
    const id = "f" + ++fieldId;
    return [h("label", { for: id }, label), h("input", Object.assign({ id }, attrs))];
  };
  const check = (label, attrs) => h("label", { class: "check" }, h("input", Object.assign({ type: "checkbox" }, attrs)), label);
  const select = (label, name, options, value) => {
    const id = "f" + ++fieldId;
    return [h("label", { for: id }, label),
      h("select", { id, name }, options.map(([v, text]) => h("option", { value: v, selected: String(v) === String(value) }, text)))];
  };
  // Focusable, so that the keyboard scrolls a table too wide for the screen.
  const table = (head, rows, label) =>
    h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": label || document.querySelector("h1").textContent }, h("table", {}, h("thead", {}, h("tr", {}, head.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c)))))));
  const when = (iso) => (iso ? new Date(iso).toLocaleString(lang === "ru" ? "ru-RU" : "en-GB", { dateStyle: "medium", timeStyle: "short" }) : "—");
  const money = (n) => Number(n).toLocaleString(lang === "ru" ? "ru-RU" : "en-GB", { maximumFractionDigits: 2 });
  const bytes = (n) => {
    const units = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
  };
  const figures = (pairs) => h("dl", { class: "figures" }, pairs.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
  const button = (text, onclick, attrs) => h("button", Object.assign({ type: "button", class: "secondary", onclick }, attrs), text);
  // No clipboard (not a secure context) or refused: the text is selected to copy by hand.
  const copyButton = (source) => button(t("keys.copy"), async (e) => {
    const b = e.currentTarget;
    try { await navigator.clipboard.writeText(source.textContent); b.textContent = t("keys.copied"); } catch {
      getSelection().selectAllChildren(source);
      b.textContent = t("keys.copyFailed");
    }
  });
  const focusOn = (el) => {
    if (!el.matches("a,button,input,[tabindex]")) el.tabIndex = -1;
    el.focus();
  };

  // --- the API ---
  // The server speaks English; other pages say its errors by code.
  const explain = (error) => (lang === "en" || !error.code ? error.message
    : T["err." + page + "." + error.code] || T["err." + error.code] || error.message);
  // The session ended (signed out or the password changed elsewhere, expired): to the log-in page,
  // which says so if this page had the session.
  const signIn = () => location.assign("/cabinet/login?" + new URLSearchParams(Object.assign(me ? { ended: 1 } : {},
    { next: location.pathname + location.search })));
  const api = async (method, path, body, retried) => {
    const response = await fetch("/cabinet/api" + path, {
      method,
      credentials: "same-origin",
      headers: Object.assign({ "x-csrf-token": csrf }, body === undefined ? {} : { "content-type": "application/json" }),
      body: body === undefined ? undefined : JSON.stringify(body)
    });
    const data = await response.json().catch(() => null);
    if (response.status === 401 && data && data.code === "not_signed_in" && document.body.dataset.signedIn === "true") signIn();
    if (response.status === 403 && data && data.code === "csrf_rejected" && me) {
      // Another tab made a new session: same account, so take its token.
      const now = retried ? null : await api("GET", "/me");
      if (now && now.account_id === me.account_id) {
        csrf = now.csrf;
        return api(method, path, body, true);
      }
      throw Object.assign(new Error(t("err.csrf_rejected")), { code: "session_changed" });
    }
    if (!response.ok) throw Object.assign(new Error((data && data.error) || response.statusText), { code: data && data.code });
    return data;
  };
  /** Runs a form's action, showing its error (or a message) in the form's status line. */
  const submit = (form, action) => form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const status = form.querySelector(".status") || form.appendChild(h("div", { class: "status" }));
    status.replaceChildren();
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    try {
      const message = await action(new FormData(form));
      if (message) status.replaceChildren(message instanceof Node ? message : note("ok", message));
    } catch (error) {
      status.replaceChildren(note("err", explain(error)));
    } finally {
      if (button) button.disabled = false;
    }
    // Disabled, the button lost the focus to the page: back it goes.
    if (button && button.isConnected && document.activeElement === document.body) button.focus();
  });
  const fail = (error) => show(note("err", error.code === "session_changed" ? error.message : t("error.generic", { error: explain(error) })));
  // EventSource gives up on any answer but 200, and the page on a server away for 30 s (the browser
  // would retry forever; a stream the page closed meanwhile is left alone): an ended session (a 401)
  // goes to the log-in page, a subject `gone` says so; else the page says it stopped, with a reload.
  const follow = (path, name, draw, gone) => {
    const events = new EventSource("/cabinet/api" + path);
    let away;
    events.addEventListener(name, (e) => draw(JSON.parse(e.data)));
    events.onopen = () => (away = clearTimeout(away));
    events.onerror = async () => {
      if (events.readyState !== EventSource.CLOSED) return void (away = away || setTimeout(() => events.readyState < 2 && (events.close(), events.onerror()), 30000));
      try { await api("GET", "/me"); if (gone && await gone()) return; } catch (error) { if (error.code === "not_signed_in") return; }
      app.prepend(h("p", { class: "msg warn", role: "alert" }, t("live.stopped"), " ",
        button(t("live.reload"), () => location.reload())));
    };
    return events;
  };
  const signedIn = (next) => (data) => {
    csrf = data.csrf;
    location.assign(next || query.get("next") || "/cabinet/numbers");
  };
  const safeNext = () => {
    const next = query.get("next");
    return next && next.startsWith("/cabinet/") && !next.startsWith("//") ? next : null;
  };

  // --- pages before signing in ---
  const pages = {};
  pages.login = () => {
    const form = h("form", { class: "card" },
      field(t("f.email"), { name: "email", type: "email", autocomplete: "username", required: true }),
      field(t("f.password"), { name: "password", type: "password", autocomplete: "current-password", maxlength: 200, required: true }),
      h("button", { type: "submit" }, t("b.login")));
    submit(form, async (f) => signedIn(safeNext())(await api("POST", "/login", { email: f.get("email"), password: f.get("password") })));
    show(query.has("ended") ? note("warn", t("m.sessionEnded")) : null, h("p", { lang: "kk" }, t("welcome.kk")), form,
      h("p", {}, h("a", { href: "/cabinet/signup" }, t("l.toSignup"))), h("p", {}, h("a", { href: "/cabinet/reset" }, t("l.toReset"))));
  };
  pages.signup = () => {
    const form = h("form", { class: "card" },
      field(t("f.email"), { name: "email", type: "email", autocomplete: "email", required: true }),
      field(t("f.company"), { name: "company", autocomplete: "organization", required: true }),
      field(t("f.passwordNew"), { name: "password", type: "password", autocomplete: "new-password", minlength: 10, maxlength: 200, required: true }),
      h("button", { type: "submit" }, t("b.signup")));
    submit(form, async (f) =>
      (await api("POST", "/signup", { email: f.get("email"), company: f.get("company"), password: f.get("password") }), t("m.signedUp")));
    show(h("p", { lang: "kk" }, t("welcome.kk")), form, h("p", {}, h("a", { href: "/cabinet/login" }, t("l.toLogin"))));
  };
  pages.confirm = async () => {
    try {
      signedIn("/cabinet/balance")(await api("POST", "/confirm", { token: query.get("token") || "" }));
    } catch (error) {
      show(note("err", explain(error)), h("p", {}, h("a", { href: "/cabinet/login" }, t("l.toLogin"))));
    }
  };
  pages.reset = () => {
    const form = h("form", { class: "card" },
      field(t("f.email"), { name: "email", type: "email", autocomplete: "email", required: true }),
      h("button", { type: "submit" }, t("b.reset")));
    submit(form, async (f) => (await api("POST", "/reset", { email: f.get("email") }), t("m.resetSent")));
    show(form, h("p", {}, h("a", { href: "/cabinet/login" }, t("l.toLogin"))));
  };
  pages.resetNew = () => {
    const form = h("form", { class: "card" },
      field(t("f.passwordNew"), { name: "password", type: "password", autocomplete: "new-password", minlength: 10, maxlength: 200, required: true }),
      h("button", { type: "submit" }, t("b.save")));
    submit(form, async (f) => signedIn("/cabinet/numbers")(await api("POST", "/reset/confirm", { token: query.get("token") || "", password: f.get("password") })));
    show(form);
  };

  // --- signed-in pages ---
  let me = null;

  pages.balance = async () => {
    const data = await api("GET", "/balance");
    const b = data.balance;
    const topUp = me.payments
      ? (() => {
        const form = h("form", { class: "card" }, h("h2", {}, t("bal.topup")),
          field(t("bal.amount"), { name: "amount", type: "number", min: 100, max: 10000000, step: 1, value: Math.max(9900, Math.ceil(data.to_resume)), required: true }),
          h("button", { type: "submit" }, t("bal.topup")));
        submit(form, async (f) => {
          const amount = Number(f.get("amount"));
          await api("POST", "/balance/top-up", { amount });
          setTimeout(() => render(), 800);
          return t("bal.topupDone", { amount: money(amount) });
        });
        return form;
      })()
      : note("warn", t("bal.noPayments"));
    const charged = b.daily_charge > 0;
    show(
      figures([[t("bal.balance"), money(b.balance) + " ₸"], [t("bal.daily"), money(b.daily_charge) + " ₸"]].concat(charged
        ? [[t("bal.days"), String(b.days_left)], [t("bal.paidUntil"), when(data.paid_until)]] : [])),
      charged ? null : h("p", {}, t("bal.noCharge")),
      // Storage owed is settled first: what brings the paused numbers back, to the tiyn.
      data.to_resume > 0 ? note("warn", t("bal.toResume", { kzt: money(data.to_resume) })) : null,
      h("p", { class: "muted" }, t("bal.perNumber", { kzt: money(data.number_day) })),
      topUp,
      h("h2", {}, t("bal.ledger")),
      data.entries.length === 0 ? h("p", {}, t("bal.empty")) : table([t("col.date"), t("col.what"), t("col.amount")],
        data.entries.map((e) => [when(e.created_at), t("kind." + e.kind) + (e.day ? " · " + e.day : "") + (e.note ? " · " + e.note : ""), money(e.amount)]))
    );
  };

  const reasons = [[/^logged out/, "why.loggedOut"], [/^qr refs ran out/, "why.qrExpired"], [/^pairing code expired/, "why.codeExpired"]];
  const reasonText = (reason) => {
    const known = reasons.find(([pattern]) => pattern.test(reason));
    return known ? t(known[1]) : reason;
  };
  const statusText = (n) => t("st." + n.status) + (n.reason && n.status !== "WORKING" ? " — " + reasonText(n.reason) : "");

  let numbersStream = null;
  pages.numbers = async () => {
    const data = await api("GET", "/numbers");
    const list = h("div");
    const draw = (data) => fill(list, [
      data.numbers.length === 0 ? h("p", {}, t("num.none")) : table([t("col.phone"), t("col.status"), t("col.actions")], data.numbers.map((n) => [
        n.phone,
        h("span", {}, statusText(n), n.paused ? h("br") : null, n.paused ? h("strong", {}, t(n.pause_reason === "operator" ? "num.pausedOperator" : "num.paused")) : null),
        h("span", {},
          n.status === "WORKING"
            ? h("a", { href: "/cabinet/limits?number=" + n.id }, t("nav.limits"))
            : h("a", { href: "/cabinet/link?number=" + n.id }, n.status === "none" ? t("num.link") : t("num.relink")),
          " ",
          n.status === "WORKING" || n.status === "SCAN_QR_CODE"
            ? button(t("num.unlink"), async () => {
              if (!confirm(t("num.unlinkConfirm"))) return;
              try {
                await api("POST", "/numbers/" + n.id + "/unlink");
                await render();
                const done = note("ok", t("num.unlinked", { phone: n.phone }));
                app.prepend(done);
                focusOn(done);
              } catch (error) { fail(error); }
            }, { "aria-label": t("num.unlink") + " " + n.phone })
            : null)
      ])),
      h("p", { class: "muted" }, t("num.limit", { count: data.numbers.length, limit: data.limit }))]);
    draw(data);
    // Status changes (a failure's reason, a pause) arrive by themselves.
    if (numbersStream) numbersStream.close();
    numbersStream = follow("/numbers/events", "numbers", draw);
    const form = h("form", { class: "card" }, h("h2", {}, t("num.add")),
      field(t("num.phone"), { name: "phone", inputmode: "numeric", autocomplete: "tel", placeholder: "77011234567", required: true }),
      h("fieldset", {}, h("legend", {}, t("num.method")),
        h("label", { class: "check" }, h("input", { type: "radio", name: "method", value: "qr", checked: true }), t("num.methodQr")),
        h("label", { class: "check" }, h("input", { type: "radio", name: "method", value: "code" }), t("num.methodCode"))),
      h("button", { type: "submit" }, t("num.add")));
    submit(form, async (f) => {
      try {
        const added = await api("POST", "/numbers", { phone: String(f.get("phone")).replace(/\D/g, ""), method: f.get("method") });
        location.assign("/cabinet/link?number=" + added.number.id + "&method=" + f.get("method"));
      } catch (error) {
        if (error.code !== "insufficient_balance") throw error;
        return h("div", { class: "msg err", role: "alert" }, explain(error), " ", h("a", { href: "/cabinet/balance" }, t("num.topupFirst")));
      }
    });
    show(list, form);
  };

  pages.link = async () => {
    const id = query.get("number") || "";
    const notFound = () => show(note("err", t("link.notFound")), h("p", {}, h("a", { href: "/cabinet/numbers" }, t("link.toNumbers"))));
    if (!/^[1-9][0-9]{0,15}$/.test(id)) return notFound();
    const status = h("p", { class: "msg warn", role: "status" });
    const view = h("div");
    // The focus, if in the view, goes to what replaced it.
    const redraw = (fill) => {
      const focused = view.contains(document.activeElement) || document.activeElement === status;
      fill();
      const target = view.querySelector(".code, img.qr, .msg, button") || status;
      if (focused && target && !view.contains(document.activeElement)) focusOn(target);
    };
    const draw = (link) => redraw(() => {
      status.textContent = t("st." + link.status);
      status.className = "msg " + (link.status === "WORKING" ? "ok" : link.status === "FAILED" || link.status === "STOPPED" ? "err" : "warn");
      if (link.status === "WORKING") {
        view.replaceChildren(note("ok", t("link.done")), h("p", {}, h("a", { href: "/cabinet/keys" }, t("link.toKeys"))));
      } else if (link.qr_image) {
        const qr = view.querySelector("img.qr");
        if (qr) return void qr.setAttribute("src", link.qr_image);
        view.replaceChildren(h("p", {}, t("link.qrHelp")), h("img", { class: "qr", src: link.qr_image, alt: t("link.qrAlt"), width: 280, height: 280 }),
          button(t("link.useCode"), () => start("code")));
      } else if (link.pairing_code) {
        view.replaceChildren(h("p", {}, t("link.codeHelp")), h("p", { class: "code", "aria-label": link.pairing_code.split("").join(" ") }, link.pairing_code),
          button(t("link.useQr"), () => start("qr")));
      } else if (link.status === "SCAN_QR_CODE") {
        status.textContent = t("link.wait");
        view.replaceChildren();
      } else if (link.status === "FAILED" || link.status === "STOPPED" || link.status === "none") {
        view.replaceChildren(
          !link.reason ? null : reasons[0][0].test(link.reason) ? note("warn", t("link.loggedOut"))
            : note("err", t("link.failed", { reason: reasonText(link.reason) })),
          button(t("num.methodQr"), () => start("qr"), { class: null }),
          button(t("num.methodCode"), () => start("code")));
      }
    });
    const start = async (method) => {
      try { draw(await api("POST", "/numbers/" + id + "/link", { method })); } catch (error) { redraw(() => view.replaceChildren(note("err", explain(error)))); }
    };
    let current;
    try {
      current = await api("GET", "/numbers/" + id + "/link");
    } catch (error) {
      if (error.code === "number_not_found") return notFound();
      throw error;
    }
    show(status, view, h("p", { class: "muted" }, t("link.live")));
    draw(current);
    follow("/numbers/" + id + "/events", "link", draw, () => api("GET", "/numbers/" + id + "/link").then(() => false,
      (error) => error.code === "number_not_found" && (notFound(), true)));
    const method = query.get("method");
    if (current.status !== "WORKING" && !current.qr && !current.pairing_code && method) start(method);
  };

  pages.keys = async () => {
    const [data, numbers] = await Promise.all([api("GET", "/keys"), api("GET", "/numbers")]);
    // Shown above the page once it is drawn again; nowhere else and never again.
    const shown = (issued) => {
      const key = h("code", { class: "secret", id: "new-key" }, issued.key);
      app.prepend(h("section", { class: "warn", role: "status" }, h("p", {}, h("strong", {}, t("keys.shownOnce"))), key, copyButton(key)));
      focusOn(key);
    };
    const scope = (k) => (k.number_id === null ? t("keys.scopeAccount") : t("keys.scopeNumber", { phone: k.number_phone }));
    const form = h("form", { class: "card" }, h("h2", {}, t("keys.issue")),
      select(t("keys.scope"), "scope", [["", t("keys.scopeAccount")]].concat(numbers.numbers.map((n) => [n.id, t("keys.scopeNumber", { phone: n.phone })])), ""),
      h("button", { type: "submit" }, t("keys.issue")));
    submit(form, async (f) => {
      const scopeId = f.get("scope");
      const issued = await api("POST", "/keys", scopeId ? { number_id: Number(scopeId) } : {});
      await render();
      shown(issued);
    });
    show(data.keys.length === 0 ? h("p", {}, t("keys.none")) : table(
      [t("col.key"), t("col.scope"), t("col.created"), t("col.lastUsed"), t("col.actions")],
      data.keys.map((k) => [h("code", {}, k.prefix + "…"), scope(k), when(k.created_at), k.last_used_at ? when(k.last_used_at) : t("never"),
        button(t("keys.reissue"), async () => {
          if (!confirm(t("keys.reissueConfirm"))) return;
          try { const issued = await api("POST", "/keys/" + k.id + "/reissue"); await render(); shown(issued); } catch (error) { fail(error); }
        }, { "aria-label": t("keys.reissue") + " " + k.prefix })])), form);
  };

  pages.webhook = async () => {
    const data = await api("GET", "/webhook");
    const w = data.webhook;
    const showSecret = (hook) => {
      if (!hook.secret) return;
      const secret = h("code", { class: "secret", id: "webhook-secret" }, hook.secret);
      app.prepend(h("section", { role: "status" }, h("p", {}, h("strong", {}, t("wh.secret"))), secret, copyButton(secret),
        hook.previous_secret_expires_at ? h("p", {}, t("wh.grace", { time: when(hook.previous_secret_expires_at) })) : null));
      focusOn(secret);
    };
    const form = h("form", { class: "card" },
      field(t("wh.url"), { name: "url", type: "url", maxlength: 2048, value: w ? w.url : "", placeholder: "https://shop.kz/wagate", required: true }),
      check(t("wh.enabled"), { name: "enabled", checked: w ? w.enabled : true }),
      h("button", { type: "submit" }, t("b.save")));
    submit(form, async (f) => {
      const hook = await api("PUT", "/webhook", { url: f.get("url"), enabled: f.get("enabled") === "on" });
      await render();
      if (hook.secret) return showSecret(hook);
      const saved = note("ok", t(hook.enabled ? "sto.saved" : "wh.savedOff"));
      app.prepend(saved);
      focusOn(saved);
    });
    const actions = w ? h("p", {},
      button(t("wh.rotate"), async () => {
        if (!confirm(t("wh.rotateConfirm"))) return;
        try { const hook = await api("POST", "/webhook/rotate-secret"); await render(); showSecret(hook); } catch (error) { fail(error); }
      }),
      button(t("wh.test"), async (e) => {
        // Disabled until drawn again: a double click sends one event. The keyboard waits on the
        // result, then is back on the button drawn again, the result beside it.
        const button = e.currentTarget;
        button.disabled = true;
        try {
          await api("POST", "/webhook/test");
          const queued = note("ok", t("wh.testQueued"));
          button.after(queued);
          focusOn(queued);
          setTimeout(render, 1500);
        } catch (error) { fail(error); }
      })) : null;
    show(
      w ? null : h("p", {}, t("wh.none")),
      w && w.notice ? note("err", w.enabled ? w.notice : t("wh.off", { notice: w.notice })) : null,
      w && w.pending_events > 0 ? h("p", {}, t("wh.pending", { count: w.pending_events })) : null,
      form, actions,
      h("h2", {}, t("wh.log")),
      data.deliveries.length === 0 ? h("p", {}, t("wh.noDeliveries")) : table(
        [t("col.time"), t("col.event"), t("col.result"), t("col.actions")],
        data.deliveries.map((d) => [when(d.created_at), d.event + " #" + d.event_id,
          t("dl." + d.status) + (d.response_code ? " · HTTP " + d.response_code : "") + (d.error ? " · " + d.error : "") + " · " + d.attempts + "×",
          d.status === "notice" ? "" : button(t("wh.resend"), async (e) => {
            const button = e.currentTarget;
            try {
              await api("POST", "/webhook/resend", { event_id: d.event_id });
              // The result takes the button's place, and the keyboard's.
              const resent = note("ok", t("wh.resent"));
              button.replaceWith(resent);
              focusOn(resent);
            } catch (error) { fail(error); }
          }, { "aria-label": t("wh.resend") + " #" + d.event_id })])));
  };

  const numberPicker = (numbers, chosen, all) => {
    const [label, sel] = select(t("lim.number"), "number", (all ? [["", t("hist.all")]] : []).concat(numbers.map((n) => [n.id, n.phone])), chosen);
    sel.addEventListener("change", () => {
      const q = new URLSearchParams(location.search);
      if (sel.value) q.set("number", sel.value); else q.delete("number");
      history.replaceState(null, "", "?" + q.toString());
      render();
    });
    return h("p", {}, label, sel);
  };

  pages.limits = async () => {
    const numbers = (await api("GET", "/numbers")).numbers;
    if (numbers.length === 0) return show(h("p", {}, t("lim.noNumbers")));
    const id = query.get("number") || numbers[0].id;
    const number = numbers.find((n) => String(n.id) === String(id)) || numbers[0];
    const l = await api("GET", "/numbers/" + number.id + "/limits");
    const bar = (label, used, limit) => h("div", {}, h("p", {}, label + ": " + t("lim.of", { used, limit })),
      h("div", { class: "bar", role: "img", "aria-label": label + ": " + t("lim.of", { used, limit }) },
        h("span", { style: null, "data-w": Math.min(100, Math.round((100 * used) / Math.max(1, limit))) })));
    const holds = [
      l.paused ? note("err", t(l.pause_reason === "operator" ? "lim.pausedOperator" : "lim.paused")) : null,
      l.warmup ? note("warn", t("lim.warmup")) : null,
      l.cold_blocked_until ? note("warn", t("lim.cold", { time: when(l.cold_blocked_until) })) : null,
      number.restricted_until && new Date(number.restricted_until) > new Date()
        ? note("err", t("lim.restricted", { time: when(number.restricted_until), reason: number.restriction_reason || "" })) : null
    ].filter(Boolean);
    show(numberPicker(numbers, number.id, false),
      h("section", {}, h("h2", {}, t("lim.trust", { rating: l.rating })), h("p", {}, t("tier." + l.tier)),
        l.enough_data ? null : h("p", { class: "muted" }, t("lim.notEnough")),
        h("h3", {}, t("lim.why")),
        table([t("lim.factor"), t("lim.score"), t("lim.advice")], Object.entries(l.factors).map(([k, v]) => {
          const level = v >= 0.8 ? "good" : v >= 0.5 ? "fair" : "weak";
          return [t("fac." + k), t("lim." + level) + " (" + Math.round(v * 100) + "%)", level === "good" ? "" : t("adv." + k)];
        }))),
      h("section", {}, h("h2", {}, t("lim.today")),
        bar(t("lim.messages"), l.used.messages, l.limits.messages_per_day),
        bar(t("lim.newContacts"), l.used.new_contacts, l.limits.new_contacts_per_day),
        bar(t("lim.checks"), l.used.checks, l.limits.checks_per_day),
        h("p", { class: "muted" }, t("lim.speed", { n: l.limits.messages_per_second }))),
      holds.length ? holds : note("ok", t("lim.fine")));
    // Widths are set here, not in a style attribute, so the page's CSP needs no inline styles.
    for (const span of app.querySelectorAll(".bar span")) span.style.width = span.dataset.w + "%";
  };

  pages.history = async () => {
    const numbers = (await api("GET", "/numbers")).numbers;
    const chosen = query.get("number") || "";
    const list = h("div");
    const more = button(t("hist.older"), null, { hidden: true });
    const rows = [];
    const phones = Object.fromEntries(numbers.map((n) => [n.id, n.phone]));
    const peerOf = (m) => (m.is_group ? m.group_subject || t("hist.group")
      : [m.name, m.peer ? "+" + m.peer : null].filter(Boolean).join(" · ") || m.chat_id);
    const load = async (before) => {
      const data = await api("GET", "/messages?" + new URLSearchParams(Object.assign(chosen ? { number: chosen } : {}, before ? { before } : {})));
      for (const m of data.messages) {
        rows.push([when(m.created_at || m.timestamp), phones[m.from] || m.from, t("dir." + m.direction),
          peerOf(m), m.text || "", T["ms." + m.status] || m.status]);
      }
      fill(list, [rows.length === 0 ? h("p", {}, t("hist.none"))
        : table([t("col.time"), t("col.phone"), t("col.dir"), t("col.peer"), t("col.text"), t("col.status")], rows)]);
      more.hidden = data.next_before === null;
      more.onclick = () => load(data.next_before).catch(fail);
    };
    show(numberPicker(numbers, chosen, true), list, more);
    await load(null);
  };

  pages.storage = async () => {
    const s = await api("GET", "/storage");
    const numbers = (await api("GET", "/numbers")).numbers;
    const phones = Object.fromEntries(numbers.map((n) => [n.id, n.phone]));
    const p = s.policy;
    // The operator's ceiling may be any bytes: shown as it is, sent only if changed.
    const ceiling = s.ceiling_bytes == null ? "" : String(Number((s.ceiling_bytes / 2 ** 30).toPrecision(6)));
    const form = h("form", { class: "card" }, h("h2", {}, t("sto.policy")),
      check(t("sto.skipGroups"), { name: "skip_groups", checked: p.skip_groups }),
      check(t("sto.skipUnknown"), { name: "skip_unknown", checked: p.skip_unknown }),
      field(t("sto.retention"), { name: "retention_days", type: "number", min: 1, max: 3650, value: s.retention_days == null ? "" : s.retention_days }),
      field(t("sto.ceiling"), { name: "ceiling_gb", type: "number", step: "any", value: ceiling }),
      h("button", { type: "submit" }, t("b.save")));
    submit(form, async (f) => {
      const days = f.get("retention_days");
      const gb = String(f.get("ceiling_gb"));
      if (gb && !(Number(gb) > 0 && Number(gb) <= 1000000)) throw new Error(t("sto.ceilingRule"));
      await api("PUT", "/storage/policy", Object.assign({
        skip_groups: f.get("skip_groups") === "on",
        skip_unknown: f.get("skip_unknown") === "on",
        retention_days: days ? Number(days) : null
      }, gb === ceiling ? {} : { ceiling_bytes: gb ? Math.round(Number(gb) * 2 ** 30) : null }));
      return t("sto.saved");
    });
    show(
      figures([[t("sto.used", { used: bytes(s.used_bytes), included: bytes(s.included_bytes) }), bytes(s.used_bytes)], [t("sto.files", { n: s.files }), String(s.files)]]),
      note(s.state === "ok" ? "ok" : s.state === "over_allowance" ? "warn" : "err", t("sto.state." + s.state)),
      s.packs.length ? h("p", {}, t("sto.packs", { charge: money(s.monthly_charge), daily: money(s.daily_charge) })) : null,
      h("h2", {}, t("sto.byNumber")),
      table([t("col.phone"), t("col.size"), t("col.count")], s.by_number.map((r) => [phones[r.number_id] || "#" + r.number_id, bytes(r.bytes), String(r.files)]), t("sto.byNumber")),
      h("h2", {}, t("sto.byKind")),
      table([t("col.kind"), t("col.size"), t("col.count")], s.by_kind.map((r) => [r.kind, bytes(r.bytes), String(r.files)]), t("sto.byKind")),
      form);
  };

  pages.exports = async () => {
    const [data, numbers] = await Promise.all([api("GET", "/exports"), api("GET", "/numbers")]);
    const phoneOf = (id) => (numbers.numbers.find((n) => n.id === id) || { phone: "#" + id }).phone;
    const form = h("form", { class: "card" }, h("h2", {}, t("exp.start")),
      select(t("lim.number"), "number", [["", t("hist.all")]].concat(numbers.numbers.map((n) => [n.id, n.phone])), ""),
      check(t("exp.media"), { name: "include_media", checked: true }),
      h("button", { type: "submit" }, t("exp.start")));
    submit(form, async (f) => {
      const number = f.get("number");
      await api("POST", "/exports", Object.assign({ include_media: f.get("include_media") === "on" }, number ? { number: Number(number) } : {}));
      setTimeout(render, 1500);
      return t("exp.started");
    });
    show(form,
      button(t("exp.refresh"), () => render()),
      data.exports.length === 0 ? h("p", {}, t("exp.none")) : table([t("col.created"), t("lim.number"), t("col.status"), t("col.size"), t("col.actions")],
        data.exports.map((x) => [when(x.created_at), x.from === null ? t("hist.all") : phoneOf(x.from),
          t("exs." + x.status) + (x.progress != null && x.status === "running" ? " " + x.progress + "%" : "") + (x.error ? " · " + x.error : ""),
          x.size == null ? "" : bytes(x.size),
          x.status === "done" ? button(t("exp.download"), async () => {
            try { location.assign((await api("GET", "/exports/" + x.id)).url); } catch (error) { fail(error); }
          }) : ""])));
  };

  pages.account = async () => {
    const form = h("form", { class: "card" }, h("h2", {}, t("acc.password")),
      field(t("f.passwordCurrent"), { name: "current", type: "password", autocomplete: "current-password", maxlength: 200, required: true }),
      field(t("f.passwordNew"), { name: "password", type: "password", autocomplete: "new-password", minlength: 10, maxlength: 200, required: true }),
      h("button", { type: "submit" }, t("b.save")));
    submit(form, async (f) => {
      const data = await api("POST", "/password", { current: f.get("current"), password: f.get("password") });
      csrf = data.csrf;
      form.reset();
      return t("m.passwordChanged");
    });
    show(figures([[t("f.email"), me.email], [t("acc.company"), me.company]]), form);
  };

  // --- start ---
  const render = async () => {
    try { await pages[page](); } catch (error) { fail(error); }
  };
  const start = async () => {
    if (document.body.dataset.signedIn === "true") {
      try {
        me = await api("GET", "/me");
        csrf = me.csrf;
      } catch (error) {
        return fail(error);
      }
      const logout = document.getElementById("logout");
      if (logout) logout.addEventListener("click", async () => {
        await api("POST", "/logout").catch(() => null);
        location.assign("/cabinet/login");
      });
    }
    await render();
  };
  start();
})();
