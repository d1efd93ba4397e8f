// The console's only script: keeps the token in sessionStorage, fetches each view (HTML the
// service renders, every value escaped there) with it, sends forms as view addresses, asks for
// confirmation before an action and sends it to the JSON API, and follows the event stream.
// No inline script anywhere (the Content-Security-Policy forbids it), nothing from another host;
// text from the service is set with textContent, never as HTML.
"use strict";
(function () {
  const KEY = "custody-token";
  const view = document.getElementById("view");
  const nav = document.getElementById("nav");
  const flash = document.getElementById("flash");
  const signinTemplate = document.getElementById("signin").outerHTML;
  let feed = null; // the event stream of the events view, while it is shown

  function token() { return sessionStorage.getItem(KEY); }

  function signin(reason) {
    stopFeed();
    sessionStorage.removeItem(KEY);
    nav.hidden = true;
    flash.textContent = "";
    view.innerHTML = signinTemplate;
    document.getElementById("signin-reason").textContent = reason || "";
    // The view asked for is kept through sign-in (a deep link), and the token is checked
    // before it is kept: one that is no token, or cannot read, is told so here.
    const wanted = location.hash && location.hash !== "#/overview" ? location.hash : "#/overview";
    document.getElementById("signin-form").addEventListener("submit", async function (event) {
      event.preventDefault();
      const candidate = document.getElementById("token").value.trim();
      const said = document.getElementById("signin-reason");
      let response;
      try {
        response = await fetch("/v1/activity", { headers: { Authorization: "Bearer " + candidate } });
      } catch (error) {
        said.textContent = "The service cannot be reached: " + error;
        return;
      }
      if (response.status === 401) {
        said.textContent = "That is not a valid token (" + await errorText(response) + "); custody tokens create makes one.";
        return;
      }
      if (response.status === 403) {
        said.textContent = "That token cannot read: the console needs a token with the read scope (or admin).";
        return;
      }
      sessionStorage.setItem(KEY, candidate);
      if (location.hash === wanted) { route(); } else { location.hash = wanted; }
    });
    document.getElementById("token").focus();
  }

  async function errorText(response) {
    const body = await response.json().catch(function () { return {}; });
    return (body.code ? body.code + ": " : "") + (body.error || response.statusText);
  }

  // The view address a location names, or null: it must resolve under /console/views/ (an
  // address with "..", encoded or not, that would reach another route is no view).
  function viewAddress(hash) {
    if (!hash.startsWith("/") || /(^|\/)(\.|%2e){1,2}(\/|\?|$)/i.test(hash.split("?")[0]) || hash.includes("\\")) {
      return null;
    }
    const url = new URL("/console/views" + hash, location.origin);
    if (url.origin !== location.origin || !url.pathname.startsWith("/console/views/")) { return null; }
    return url.pathname + url.search;
  }

  // The latest view asked for: an answer that arrives after a newer view was asked for (a
  // slow view, clicked past) is dropped, never drawn over the newer one.
  let routing = 0;

  // Shows the view the location names. The view is aria-busy until it is drawn.
  async function route() {
    const mine = ++routing;
    view.setAttribute("aria-busy", "true");
    try {
      await show(function () { return mine === routing; });
    } finally {
      if (mine === routing) { view.removeAttribute("aria-busy"); }
    }
  }

  async function show(isLatest) {
    stopFeed();
    if (!token()) { return signin(""); }
    const address = viewAddress((location.hash || "#/overview").slice(1) || "/overview");
    if (address === null) {
      nav.hidden = false;
      const alert = document.createElement("p");
      alert.setAttribute("role", "alert");
      alert.className = "block";
      alert.textContent = "There is no such view.";
      view.replaceChildren(alert);
      return;
    }
    let response;
    try {
      response = await fetch(address, { headers: { Authorization: "Bearer " + token() } });
    } catch (error) {
      if (isLatest()) { view.textContent = "The service cannot be reached: " + error; }
      return;
    }
    if (!isLatest()) { return; }
    if (response.status === 401) {
      const body = await response.json().catch(function () { return {}; });
      return signin("Signed out: " + (body.error || "the token was refused"));
    }
    nav.hidden = false;
    if (!response.ok) {
      const alert = document.createElement("p");
      alert.setAttribute("role", "alert");
      alert.className = "block";
      alert.textContent = await errorText(response);
      if (isLatest()) { view.replaceChildren(alert); }
      return;
    }
    // Only a view (HTML the service rendered, every value escaped) goes into the page: an
    // answer of another kind is never read as markup.
    if (!(response.headers.get("Content-Type") || "").startsWith("text/html")) {
      view.textContent = "The service answered something that is not a view.";
      return;
    }
    const html = await response.text();
    if (!isLatest()) { return; }
    view.innerHTML = html;
    bind();
    const heading = view.querySelector("h2");
    if (heading) { heading.setAttribute("tabindex", "-1"); heading.focus(); }
  }

  function bind() {
    // A form with data-view="/path" becomes the view address /path?field=value&...
    for (const form of view.querySelectorAll("form[data-view]")) {
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        // Each value percent-encoded (a space as %20, never "+": a UPN may hold a "+").
        const query = [];
        for (const [name, value] of new FormData(form)) {
          if (value !== "") { query.push(encodeURIComponent(name) + "=" + encodeURIComponent(value)); }
        }
        location.hash = "#" + form.dataset.view + (query.length > 0 ? "?" + query.join("&") : "");
      });
    }
    // The what-if form draws the fields of the action picked.
    const picked = document.getElementById("whatif-action");
    if (picked) {
      picked.addEventListener("change", function () {
        location.hash = "#/whatif" + (picked.value ? "?action=" + encodeURIComponent(picked.value) : "");
      });
    }
    const candidate = document.getElementById("candidate-form");
    if (candidate) { candidate.addEventListener("submit", compareCandidate); }
    const shadow = document.getElementById("shadow-form");
    if (shadow) { shadow.addEventListener("submit", setShadow); }
    // A running shadow's counts move: its section is read again while the view is shown.
    const refreshing = view.querySelector("section[data-refresh]");
    if (refreshing) { refreshSection(refreshing.id, routing); }
    for (const button of view.querySelectorAll("button[data-action]")) {
      button.addEventListener("click", function () { confirmAction(button); });
    }
    if (document.getElementById("events-list")) { startFeed(); }
  }

  // The files picked in the input `id`, by name, as a bundle's body carries them; null (and
  // the operator told) when none is picked.
  async function pickedBundle(id) {
    const picked = document.getElementById(id).files;
    if (picked.length === 0) {
      say("block", "Pick the candidate bundle's files first (tenant.json and the policy files).");
      return null;
    }
    const files = {};
    for (const file of picked) { files[file.name] = await file.text(); }
    return files;
  }

  // The files the operator picked, sent as a bundle (the body of PUT /v1/bundle) to be
  // compared with the policy in force; nothing is applied.
  async function compareCandidate(event) {
    event.preventDefault();
    // Drawn only if no other view was asked for meanwhile.
    const shown = routing;
    const files = await pickedBundle("candidate-files");
    if (files === null) { return; }
    let response;
    try {
      response = await fetch("/console/views/diff", {
        method: "POST", body: JSON.stringify({ files: files }),
        headers: { Authorization: "Bearer " + token(), "Content-Type": "application/json" } });
    } catch (error) {
      return say("block", "The service cannot be reached: " + error);
    }
    if (response.status === 401) { return signin("Signed out: " + await errorText(response)); }
    if (!response.ok) { return say("block", "The candidate was refused: " + await errorText(response)); }
    flash.textContent = "";
    const html = await response.text();
    if (shown !== routing) { return; }
    view.innerHTML = html;
    bind();
  }

  // Replaces the section `id` with the one a new reading of the view holds, every
  // data-refresh seconds while the view is the one shown: the rest of the page (a form being
  // filled in, the focus) stays as it is, and a confirmation open in the section puts it off.
  function refreshSection(id, shown) {
    const section = document.getElementById(id);
    setTimeout(async function () {
      const current = document.getElementById(id);
      if (shown !== routing || !current) { return; }
      if (current.querySelector(".confirm")) { return refreshSection(id, shown); }
      let response;
      try {
        response = await fetch(viewAddress((location.hash || "#/overview").slice(1)), {
          headers: { Authorization: "Bearer " + token() } });
      } catch (error) {
        return refreshSection(id, shown);
      }
      if (!response.ok || !(response.headers.get("Content-Type") || "").startsWith("text/html")) { return; }
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html").getElementById(id);
      const now = document.getElementById(id);
      if (shown !== routing || !now || now.querySelector(".confirm")) { return; }
      if (!fresh) { return route(); }
      now.replaceWith(fresh);
      for (const button of fresh.querySelectorAll("button[data-action]")) {
        button.addEventListener("click", function () { confirmAction(button); });
      }
      if (fresh.dataset.refresh) { refreshSection(id, shown); }
    }, Number(section.dataset.refresh) * 1000);
  }

  // The files the operator picked, set as the shadow bundle of every replica (PUT
  // /v1/bundle/shadow); nothing is applied.
  async function setShadow(event) {
    event.preventDefault();
    const files = await pickedBundle("shadow-files");
    if (files === null) { return; }
    let response;
    try {
      response = await fetch("/v1/bundle/shadow", {
        method: "PUT", body: JSON.stringify({ files: files }),
        headers: { Authorization: "Bearer " + token(), "Content-Type": "application/json" } });
    } catch (error) {
      return say("block", "The service cannot be reached: " + error);
    }
    if (response.status === 401) { return signin("Signed out: " + await errorText(response)); }
    if (!response.ok) { return say("block", "The shadow was refused: " + await errorText(response)); }
    const answer = await response.json().catch(function () { return {}; });
    say("allow", "Shadow " + ((answer.shadow && answer.shadow.revision) || "") + " set: every replica decides under it too");
    route();
  }

  // MARK: Actions (admin tokens only; the API refuses them to others in any case)

  // Asks in the page, next to the button: what the action does, a reason when it needs one,
  // the account's name typed back for a wipe, then Confirm or Cancel. Nothing is sent before
  // Confirm; the first field, or Cancel, has the focus (Enter never confirms on its own), and
  // Escape cancels.
  function confirmAction(button) {
    const old = view.querySelector(".confirm");
    if (old) { old.remove(); }
    const box = document.createElement("div");
    box.className = "confirm";
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Confirm");
    const text = document.createElement("p");
    text.textContent = button.dataset.confirm;
    box.appendChild(text);
    let reason = null;
    if (button.dataset.reason === "required") {
      const label = document.createElement("label");
      label.textContent = "Reason (recorded with your token's name) ";
      reason = document.createElement("input");
      reason.name = "reason";
      reason.required = true;
      reason.autocomplete = "off";
      label.appendChild(reason);
      box.appendChild(label);
    }
    let typed = null;
    if (button.dataset.typeBack) {
      const label = document.createElement("label");
      label.textContent = "Type " + button.dataset.typeBack + " to confirm ";
      typed = document.createElement("input");
      typed.name = "typed";
      typed.autocomplete = "off";
      typed.spellcheck = false;
      label.appendChild(typed);
      box.appendChild(label);
    }
    const confirm = document.createElement("button");
    confirm.type = "button";
    confirm.className = "danger";
    confirm.textContent = "Confirm";
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.textContent = "Cancel";
    box.append(confirm, " ", cancel);
    button.insertAdjacentElement("afterend", box);
    function matches() { return !typed || typed.value.trim() === button.dataset.typeBack; }
    confirm.disabled = !matches();
    if (typed) { typed.addEventListener("input", function () { confirm.disabled = !matches(); }); }
    (reason || typed || cancel).focus();
    function dismiss() { box.remove(); button.focus(); }
    cancel.addEventListener("click", dismiss);
    box.addEventListener("keydown", function (event) {
      if (event.key === "Escape") { event.preventDefault(); dismiss(); }
    });
    confirm.addEventListener("click", async function () {
      if (reason && reason.value.trim() === "") { reason.focus(); return; }
      if (!matches()) { typed.focus(); return; }
      confirm.disabled = true;
      const body = {};
      if (button.dataset.revision) { body.revision = button.dataset.revision; }
      if (reason) { body.reason = reason.value.trim(); }
      const init = { method: button.dataset.method, headers: { Authorization: "Bearer " + token() } };
      if (Object.keys(body).length > 0) {
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(body);
      }
      let response;
      try {
        response = await fetch(button.dataset.path, init);
      } catch (error) {
        box.remove();
        return say("block", button.textContent.replace("…", "") + " failed: the service cannot be reached (" + error + ")");
      }
      if (response.status === 401) { return signin("Signed out: " + await errorText(response)); }
      box.remove();
      if (!response.ok) {
        return say("block", button.textContent.replace("…", "") + " refused: " + await errorText(response));
      }
      say("allow", button.textContent.replace("…", "") + " done: " + summary(button.dataset.action, await response.json().catch(function () { return {}; })));
      route();
    });
  }

  function summary(action, answer) {
    switch (action) {
      case "wipe": return (answer.account || "the account") + " was wiped (event " + answer.eventId + ")";
      case "rotate": return "key version " + answer.version + " of " + answer.owner;
      case "rollback": return "revision " + answer.revision + " is in force";
      case "freeze": return "bundle changes are refused until unfrozen";
      case "unfreeze": return "bundle changes are applied again";
      case "shadow-stop": return "no replica decides under the shadow any more";
      default: return answer.result || answer.revision || "done";
    }
  }

  function say(kind, text) {
    flash.className = kind;
    flash.textContent = text;
  }

  // MARK: The live feed

  // Streams GET /v1/events with the token (EventSource cannot send one), shows each event
  // newest first, and reconnects with Last-Event-ID after the last one shown, so nothing is
  // lost across a reconnect.
  function startFeed() {
    const list = document.getElementById("events-list");
    const status = document.getElementById("events-status");
    const filter = document.getElementById("events-filter");
    // The feed begins with the events logged just before the page opened (up to 50 of them).
    const history = status.dataset.historyFrom;
    const state = { controller: new AbortController(), last: history === undefined ? null : history, stopped: false };
    feed = state;
    const shown = function (item) {
      const kind = filter.elements.kind.value.trim();
      const account = filter.elements.account.value.trim().toLowerCase();
      return (kind === "" || item.dataset.kind === kind) && (account === "" || item.dataset.text.includes(account));
    };
    filter.addEventListener("input", function () {
      for (const item of list.children) { item.hidden = !shown(item); }
    });
    filter.addEventListener("submit", function (event) { event.preventDefault(); });
    const add = function (id, name, data, at) {
      const item = document.createElement("li");
      item.dataset.kind = name;
      item.dataset.text = data.toLowerCase();
      item.dataset.id = id;
      const badge = document.createElement("span");
      badge.className = "badge";
      badge.textContent = name;
      const code = document.createElement("code");
      code.textContent = data.length > 400 ? data.slice(0, 400) + "… (" + data.length + " characters)" : data;
      if (at) {
        const time = document.createElement("time");
        time.dateTime = at;
        time.textContent = new Date(at).toLocaleString();
        item.append(time, " ");
      }
      item.append("#" + id + " ", badge, " ", code);
      item.hidden = !shown(item);
      list.prepend(item);
      while (list.children.length > 500) { list.lastElementChild.remove(); }
    };
    const frame = function (text) {
      let id = null, name = "message", data = [], at = null;
      for (const line of text.split("\n")) {
        // The time the event was logged comes as a comment: ": at 2026-11-29T14:30:25.253Z".
        if (line.startsWith(": at ")) { at = line.slice(5); continue; }
        if (line.startsWith(":")) { continue; }
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") { id = value; } else if (field === "event") { name = value; } else if (field === "data") { data.push(value); }
      }
      if (data.length === 0 && id === null) { return; }
      const body = data.join("\n");
      if (name === "ready" || name === "reset") {
        const position = JSON.parse(body);
        if (name === "reset") { add(id, "reset", body); }
        if (state.last === null || name === "reset") { state.last = String(position.eventId); }
        status.textContent = "Live: every event after " + state.last + " is shown as it happens.";
        status.dataset.live = "true";
        return;
      }
      if (name === "unauthorized") { state.stopped = true; signin("Signed out: " + (JSON.parse(body).reason || "the token is no longer valid")); return; }
      if (name === "shutdown") { status.textContent = "The service is shutting down; reconnecting…"; return; }
      if (id !== null) { state.last = id; add(id, name, body, at); }
    };
    const connect = async function () {
      while (!state.stopped) {
        const headers = { Authorization: "Bearer " + token() };
        if (state.last !== null) { headers["Last-Event-ID"] = state.last; }
        try {
          const response = await fetch("/v1/events", { headers: headers, signal: state.controller.signal });
          if (response.status === 401) { state.stopped = true; return signin("Signed out: " + await errorText(response)); }
          if (!response.ok) { status.textContent = "The feed was refused: " + await errorText(response); status.dataset.live = "false"; return; }
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) { break; }
            buffer += value.replace(/\r\n?/g, "\n");
            let end;
            while ((end = buffer.indexOf("\n\n")) >= 0) {
              frame(buffer.slice(0, end));
              buffer = buffer.slice(end + 2);
            }
          }
        } catch (error) {
          if (state.stopped) { return; }
        }
        if (state.stopped) { return; }
        status.textContent = "Disconnected; reconnecting after event " + (state.last || "-") + "…";
        status.dataset.live = "false";
        await new Promise(function (resolve) { setTimeout(resolve, 1000); });
      }
    };
    connect();
  }

  function stopFeed() {
    if (feed) {
      feed.stopped = true;
      feed.controller.abort();
      feed = null;
    }
  }

  document.getElementById("signout").addEventListener("click", function () { signin("Signed out."); });
  window.addEventListener("hashchange", function () { flash.textContent = ""; route(); });
  route();
})();
