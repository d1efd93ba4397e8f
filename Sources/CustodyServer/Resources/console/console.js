// The console's only script: keeps the token in sessionStorage, fetches each view (HTML the
// service renders, every value escaped there) with it, and sends forms as view addresses. No
// inline script anywhere (the Content-Security-Policy forbids it), nothing from another host.
"use strict";
(function () {
  const KEY = "custody-token";
  const view = document.getElementById("view");
  const nav = document.getElementById("nav");
  const signinTemplate = document.getElementById("signin").outerHTML;

  function signin(reason) {
    sessionStorage.removeItem(KEY);
    nav.hidden = true;
    view.innerHTML = signinTemplate;
    document.getElementById("signin-reason").textContent = reason || "";
    document.getElementById("signin-form").addEventListener("submit", function (event) {
      event.preventDefault();
      sessionStorage.setItem(KEY, document.getElementById("token").value.trim());
      if (location.hash === "#/overview") { route(); } else { location.hash = "#/overview"; }
    });
    document.getElementById("token").focus();
  }

  async function route() {
    const token = sessionStorage.getItem(KEY);
    if (!token) { return signin(""); }
    const address = (location.hash || "#/overview").slice(1) || "/overview";
    let response;
    try {
      response = await fetch("/console/views" + address, { headers: { Authorization: "Bearer " + token } });
    } catch (error) {
      view.textContent = "The service cannot be reached: " + error;
      return;
    }
    if (response.status === 401) {
      const body = await response.json().catch(function () { return {}; });
      return signin("Signed out: " + (body.error || "the token was refused"));
    }
    nav.hidden = false;
    if (!response.ok) {
      const body = await response.json().catch(function () { return {}; });
      const alert = document.createElement("p");
      alert.setAttribute("role", "alert");
      alert.className = "block";
      alert.textContent = (body.code ? body.code + ": " : "") + (body.error || response.statusText);
      view.replaceChildren(alert);
      return;
    }
    view.innerHTML = await response.text();
    bind();
    const heading = view.querySelector("h2");
    if (heading) { heading.setAttribute("tabindex", "-1"); heading.focus(); }
  }

  // A form with data-view="/path" becomes the view address /path?field=value&...
  function bind() {
    for (const form of view.querySelectorAll("form[data-view]")) {
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        const query = new URLSearchParams();
        for (const [name, value] of new FormData(form)) { if (value !== "") { query.append(name, value); } }
        location.hash = "#" + form.dataset.view + (query.toString() ? "?" + query.toString() : "");
      });
    }
  }

  document.getElementById("signout").addEventListener("click", function () { signin("Signed out."); });
  window.addEventListener("hashchange", route);
  route();
})();
