#!/usr/bin/python3
# The admin console in a real browser: headless Chromium driven through WebDriver (Debian's
# chromium, chromium-driver and python3-selenium, which `make deps` installs), against
# `custody serve` on the example bundle (one policy renamed to an HTML payload), with a
# throwaway state. Each check asserts what the page shows.
#
#   /usr/bin/python3 scripts/console/browser_test.py BINARY [--screenshots DIR]
#
# Without Chromium it says why and exits 0; under CI=true that is a failure. Prints PASS or
# FAIL per check, then `console: N passed, M failed`; exit status 1 when any failed.
import json, os, re, shutil, subprocess, sys, tempfile, time, traceback

binary = os.path.abspath(sys.argv[1])
shots = None
if "--screenshots" in sys.argv:
    shots = os.path.abspath(sys.argv[sys.argv.index("--screenshots") + 1])
    os.makedirs(shots, exist_ok=True)
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CI = os.environ.get("CI") == "true"

chromium = shutil.which("chromium")
driver_path = shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait, Select
    from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
except ImportError:
    webdriver = None
if not chromium or not driver_path or webdriver is None:
    why = "Chromium, chromedriver or python3-selenium is missing (make deps installs them)"
    print(f"console: SKIP: {why}")
    sys.exit(1 if CI else 0)

XSS = "<img src=x onerror=alert(1)>"
work = tempfile.mkdtemp(prefix="custody-console.")
server = None
results = []


def run(*args, check=True):
    return subprocess.run([binary, *args], cwd=work, check=check, capture_output=True, text=True)


def check(name):
    def wrap(function):
        try:
            function()
            results.append((name, None))
            print(f"PASS {name}")
        except Exception as error:  # noqa: BLE001: a failed check is reported, the rest still run
            results.append((name, error))
            print(f"FAIL {name}: {type(error).__name__}: {error}")
            traceback.print_exc(limit=2)
        return function
    return wrap


try:
    bundle = os.path.join(work, "bundle")
    shutil.copytree(os.path.join(root, "policies"), bundle, ignore=shutil.ignore_patterns("matrices", "*.jsonl"))
    staff = os.path.join(bundle, "all-staff.json")
    document = json.load(open(staff))
    for policy in document.get("value", [document]):
        policy["displayName"] = XSS
    json.dump(document, open(staff, "w"), indent=2)
    state = os.path.join(work, "state.sqlite")
    master = os.path.join(work, "master.key")
    with open(os.open(master, os.O_WRONLY | os.O_CREAT, 0o600), "w") as key_file:
        key_file.write(os.urandom(32).hex())
    run("apply", "--bundle", bundle, "--state", state, "--platform", "ios")
    # A second revision, so that there is something to compare: every staff member's print
    # blocked.
    for policy in document.get("value", [document]):
        policy["printBlocked"] = True
    json.dump(document, open(staff, "w"), indent=2)
    run("apply", "--bundle", bundle, "--state", state)
    history = json.loads(run("bundle", "history", "--state", state, "--json").stdout)
    revision, older = history[0]["revision"], history[1]["revision"]
    # A key for alice (version 1), made as an app would, by protecting a file for her.
    plain = os.path.join(work, "note.txt")
    open(plain, "w").write("hello")
    run("protect", "--owner", "alice@contoso.com", "--state", state, "--master-key-file", master, plain,
        plain + ".custody")
    read_token = run("tokens", "create", "--scope", "read", "--name", "console read", "--state", state).stdout.strip()
    admin_token = run("tokens", "create", "--scope", "admin", "--name", "ops lead", "--state", state).stdout.strip()
    revoked = run("tokens", "create", "--scope", "read", "--name", "gone", "--state", state).stdout.strip()
    decide_token = run("tokens", "create", "--scope", "decide", "--name", "a service", "--state", state).stdout.strip()
    run("tokens", "revoke", revoked.split("_")[1], "--state", state)
    # Decisions audited under the revision in force, for the candidate's impact: bob may not
    # print (every staff member's print blocked), alice may save to OneDrive.
    run("audit", "--decisions", "on", "--state", state)
    subprocess.run([binary, "decide", "--state", state], cwd=work, check=True, capture_output=True, text=True,
                   input='{"action":"print","account":"bob@contoso.com"}\n'
                         '{"action":"print","account":"bob@contoso.com"}\n'
                         '{"action":"saveTo","owner":"alice@contoso.com","location":"oneDriveForBusiness"}\n')

    server = subprocess.Popen(
        [binary, "serve", "--state", state, "--listen", "127.0.0.1:0", "--master-key-file", master], cwd=work,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = None
    deadline = time.time() + 30
    while base is None and time.time() < deadline:
        line = server.stdout.readline()
        match = re.search(r"https? on (127\.0\.0\.1:\d+)", line)
        if match:
            base = "http://" + match.group(1)
    if base is None:
        raise RuntimeError("the service did not say where it listens")

    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
                     "--disable-dev-shm-usage"]:
        options.add_argument(argument)
    options.binary_location = chromium
    from selenium.webdriver.chrome.service import Service
    browser = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    # The script replaces the view (and the sign-in form) as answers arrive: an element found a
    # moment before may be gone; the wait looks again rather than failing.
    wait = WebDriverWait(browser, 15, ignored_exceptions=[StaleElementReferenceException])

    def shot(name):
        if shots:
            browser.save_screenshot(os.path.join(shots, name + ".png"))

    def sign_in(token):
        browser.get(base + "/console")
        browser.execute_script("sessionStorage.clear()")
        browser.get(base + "/console")
        wait.until(lambda b: b.find_element(By.ID, "token").is_displayed())
        browser.find_element(By.ID, "token").send_keys(token)
        browser.find_element(By.CSS_SELECTOR, "#signin-form button").click()

    def view_text():
        return browser.find_element(By.ID, "view").text

    def api(method, path, token, body=None):
        import urllib.error, urllib.request
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(base + path, data=data, method=method)
        request.add_header("Authorization", "Bearer " + token)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def cell(row, column):
        return browser.find_element(By.CSS_SELECTOR, f"tr[data-row='{row}'] details[data-column='{column}']")

    def open_cell(row, column):
        cell(row, column).find_element(By.TAG_NAME, "summary").click()
        wait.until(lambda b: cell(row, column).get_attribute("open") is not None)
        return cell(row, column)

    def visit(address, selector):
        """Opens a view's address and waits until that view is drawn and holds an element of it.

        The page routes on hashchange, which fires after get() returns, and not at all when the
        address is the one shown: routed once more here, the view is busy (aria-busy) from this
        call until the answer to it is drawn, so an element of the view shown before never
        passes for one of this view."""
        browser.get(base + "/console#" + address)
        browser.execute_script("window.dispatchEvent(new HashChangeEvent('hashchange'))")
        wait.until(lambda b: b.find_element(By.ID, "view").get_attribute("aria-busy") != "true"
                   and b.find_elements(By.CSS_SELECTOR, selector))

    def drawn_after(action, selector):
        """Runs `action` (a click that shows another view) and waits until a view drawn after it
        holds an element of `selector`: the children of the view shown before are marked first,
        so none of theirs passes for one of the new view's."""
        browser.execute_script(
            "for (const child of document.getElementById('view').children) child.setAttribute('data-before', '')")
        action()
        wait.until(lambda b: b.find_element(By.ID, "view").get_attribute("aria-busy") != "true"
                   and b.find_elements(By.CSS_SELECTOR, "#view > :not([data-before])")
                   and b.find_elements(By.CSS_SELECTOR, selector))

    @check("the page carries a strict Content-Security-Policy and no inline script")
    def headers():
        import urllib.request
        response = urllib.request.urlopen(base + "/console")
        policy = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, policy
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        page = response.read().decode()
        assert "<script>" not in page and "onclick" not in page, "inline script in the page"

    @check("a revoked token is sent back to sign-in with the reason")
    def revoked_token():
        sign_in(revoked)
        wait.until(lambda b: b.find_element(By.ID, "signin-reason").text != "")
        reason = browser.find_element(By.ID, "signin-reason").text
        assert "not a valid token" in reason and "revoked" in reason.lower(), reason
        assert browser.execute_script("return sessionStorage.getItem('custody-token')") is None
        shot("sign-in")

    @check("sign in: the overview shows the revision in force, readiness and this replica")
    def overview():
        sign_in(read_token)
        wait.until(lambda b: b.find_elements(By.ID, "revision"))
        assert browser.find_element(By.ID, "revision").text == revision
        assert browser.find_element(By.ID, "ready").text == "Ready"
        assert "current" in view_text()
        assert browser.find_elements(By.CSS_SELECTOR, "#activity-table tbody tr"), "no activity row"
        # The token is in sessionStorage, never in the address.
        assert read_token not in browser.current_url
        assert browser.execute_script("return sessionStorage.getItem('custody-token')") == read_token
        shot("overview")

    @check("sign in checks the token: not a token, or one that cannot read, is told so; a deep link is kept through sign-in")
    def signin_checks():
        for candidate, said in [("not-a-token", "not a valid token"), (decide_token, "cannot read")]:
            sign_in(candidate)
            wait.until(lambda b: said in b.find_element(By.ID, "signin-reason").text)
            assert browser.execute_script("return sessionStorage.getItem('custody-token')") is None, "kept a bad token"
        browser.get(base + "/console")
        browser.execute_script("sessionStorage.clear()")
        browser.get(base + "/console#/accounts?q=bob")
        wait.until(lambda b: b.find_element(By.ID, "token").is_displayed())
        browser.find_element(By.ID, "token").send_keys(read_token)
        browser.find_element(By.CSS_SELECTOR, "#signin-form button").click()
        wait.until(lambda b: "1 of the 4 accounts" in view_text())
        assert browser.current_url.endswith("#/accounts?q=bob"), browser.current_url

    @check("search an account, open it, find where a setting comes from")
    def account():
        visit("/accounts", "[name=\'q\']")
        field = browser.find_element(By.NAME, "q")
        field.send_keys("alice")
        field.submit()
        wait.until(lambda b: "1 of the 4 accounts" in view_text())
        shot("accounts")
        drawn_after(browser.find_element(By.LINK_TEXT, "alice@contoso.com").click, "tr[data-setting='printBlocked']")
        row = browser.find_element(By.CSS_SELECTOR, "tr[data-setting='printBlocked']").text
        assert "true" in row and "Contoso Finance (iOS)" in row, row
        shot("account")

    @check("a policy named with HTML renders as that text and runs nothing")
    def xss():
        visit("/accounts/alice%40contoso.com", "tr[data-setting='printBlocked']")
        names = [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#view li")]
        assert any(XSS in name for name in names), names
        assert not browser.find_elements(By.CSS_SELECTOR, "#view img"), "an element was made from a policy name"
        try:
            browser.switch_to.alert
            raise AssertionError("a script ran")
        except NoAlertPresentException:
            pass

    @check("an address that climbs out of the views (.., encoded or not) reaches no other route: no JSON is read as markup")
    def traversal():
        for address in ["/../../v1/accounts/alice%40contoso.com/policy", "/%2e%2e/%2e%2e/v1/bundle",
                        "/accounts/../../../v1/accounts?q=a", "/..%2F..%2Fv1/bundle"]:
            visit(address, "#view [role='alert']")
            assert not browser.find_elements(By.CSS_SELECTOR, "#view img, #view button[data-action]"), address
            assert XSS not in browser.find_element(By.ID, "view").get_attribute("innerHTML"), address

    @check("what-if: saveTo box for alice is blocked, with the reason, the setting and the rule")
    def what_if():
        visit("/whatif", "[name=\'action\']")
        drawn_after(lambda: Select(browser.find_element(By.NAME, "action")).select_by_value("saveTo"), "[name='owner']")
        browser.find_element(By.NAME, "owner").send_keys("alice@contoso.com")
        Select(browser.find_element(By.NAME, "location")).select_by_value("box")
        browser.find_element(By.NAME, "locationAccount").send_keys("alice@contoso.com")
        drawn_after(browser.find_element(By.CSS_SELECTOR, "form[data-view] button").click, "#decision")
        assert browser.find_element(By.ID, "decision").text == "Blocked"
        reason = browser.find_element(By.ID, "reason").text
        assert "saveAsBlocked" in reason and "allowedDataStorageLocations" in reason, reason
        assert "documented" in view_text()
        shot("what-if")

    @check("the decision grid: coloured cells for every location, and a cell opens its reason")
    def grid():
        visit("/accounts/alice%40contoso.com", "#grid-link")
        drawn_after(browser.find_element(By.ID, "grid-link").click, "details.cell")
        box = cell("saveTo", "box")
        assert "block" in box.get_attribute("class").split(), box.get_attribute("class")
        assert "blocked" in box.text
        onedrive = cell("saveTo", "oneDriveForBusiness")
        assert "allow" in onedrive.get_attribute("class").split()
        assert box.get_attribute("open") is None, "the cell is open before it was clicked"
        opened = open_cell("saveTo", "box")
        assert opened.find_element(By.CSS_SELECTOR, ".reason").is_displayed()
        reason = opened.find_element(By.CSS_SELECTOR, ".reason").text
        assert "saveAsBlocked" in reason and "allowedDataStorageLocations" in reason, reason
        printing = cell("account", "print")
        assert "blocked" in printing.text, printing.text
        # Every save location has its cell.
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr[data-row='saveTo'] details.cell")) == 11
        shot("grid")

    @check("a group's grid: a cell where its members are not treated alike opens to the member it blocks and why")
    def group_grid():
        visit("/accounts/alice%40contoso.com", "a.group")
        drawn_after(browser.find_element(By.LINK_TEXT, "grp-all-staff").click, "details.cell")
        other = cell("saveTo", "other")
        assert "mixed" in other.get_attribute("class").split(), other.get_attribute("class")
        assert "2 allowed, 1 blocked" in other.text, other.text
        text = open_cell("saveTo", "other").text
        assert "Blocked: alice@contoso.com" in text and "saveAsBlocked" in text, text
        shot("group-grid")

    @check("diff two revisions: the setting that changed and the decisions that flip, nothing applied")
    def diff():
        visit("/diff", "[name=\'from\']")
        Select(browser.find_element(By.NAME, "from")).select_by_value(older)
        Select(browser.find_element(By.NAME, "to")).select_by_value(revision)
        drawn_after(browser.find_element(By.CSS_SELECTOR, "form[data-view] button").click, "#setting-changes tbody tr")
        rows = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#setting-changes tbody tr")]
        assert any("printBlocked" in row and "false" in row and "true" in row for row in rows), rows
        flips = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#decision-changes tbody tr")]
        assert any("bob@contoso.com" in row and "print" in row for row in flips), flips
        status, bundle = api("GET", "/v1/bundle", read_token)
        assert bundle["revision"] == revision, "comparing applied something"
        # A read token is offered no rollback.
        assert not browser.find_elements(By.CSS_SELECTOR, "button[data-action='rollback']")
        shot("diff")

    @check("diff a candidate bundle picked from disk against the policy in force, applying nothing")
    def candidate():
        folder = os.path.join(work, "candidate")
        os.makedirs(folder, exist_ok=True)
        paths = []
        for name in sorted(os.listdir(bundle)):
            if name.endswith(".json"):
                text = open(os.path.join(bundle, name)).read()
                if name == "all-staff.json":
                    text = text.replace('"printBlocked": true', '"printBlocked": false')
                open(os.path.join(folder, name), "w").write(text)
                paths.append(os.path.join(folder, name))
        visit("/diff", "#candidate-files")
        browser.find_element(By.ID, "candidate-files").send_keys("\n".join(paths))
        drawn_after(browser.find_element(By.CSS_SELECTOR, "#candidate-form button").click, "#candidate")
        rows = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#setting-changes tbody tr")]
        assert any("printBlocked" in row and row.index("true") < row.index("false") for row in rows), rows
        flips = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#decision-changes tbody tr")]
        assert any("bob@contoso.com" in row for row in flips), flips
        # The impact on the decisions audited over the last 7 days: bob's two prints, blocked
        # then, allowed under the candidate: a loosening flip, listed with both reasons.
        impact = browser.find_element(By.ID, "impact").text
        assert "3 decided again" in impact and "2 loosened" in impact and "0 tightened" in impact, impact
        assert "Impact on the last 7 days" in impact, impact
        flips = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#impact-flips tbody tr")]
        assert len(flips) == 1 and "print" in flips[0] and "block" in flips[0] and "allow" in flips[0], flips
        assert "2" in flips[0] and "printBlocked is true" in flips[0] and "bob@contoso.com" in flips[0], flips
        status, bundle_now = api("GET", "/v1/bundle", read_token)
        assert bundle_now["revision"] == revision, "comparing a candidate applied it"
        shot("diff-candidate")

    @check("without an admin token: no action is offered, and the API refuses a wipe")
    def read_only():
        visit("/accounts/bob%40contoso.com", "#account-actions")
        assert browser.find_elements(By.ID, "actions-need-admin")
        assert not browser.find_elements(By.CSS_SELECTOR, "button[data-action]")
        status, body = api("POST", "/v1/accounts/bob%40contoso.com/wipe", read_token)
        assert status == 403 and body["code"] == "forbidden", (status, body)
        status, body = api("GET", "/v1/accounts/bob%40contoso.com/status", read_token)
        assert status == 200 and all(i["wipedAt"] is None for i in body["identifiers"]), body

    @check("the events view: a bundle edit arrives live, without a reload, and the filter keeps to one kind")
    def events():
        sign_in(admin_token)
        wait.until(lambda b: b.find_elements(By.ID, "revision"))
        visit("/events", "#events-status[data-live='true']")
        # Issue 47, item 26: the events logged before the page opened are shown, each with its time.
        wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#events-list li[data-kind='bundleApplied'] time"))
        browser.execute_script("window.notReloaded = true")
        files = {}
        for name in sorted(os.listdir(bundle)):
            if name.endswith(".json"):
                files[name] = open(os.path.join(bundle, name)).read()
        files["all-staff.json"] = files["all-staff.json"].replace('"printBlocked": true', '"printBlocked": false')
        status, applied = api("PUT", "/v1/bundle", admin_token, {"files": files})
        assert status == 200, (status, applied)
        wait.until(lambda b: any(applied["revision"] in li.text for li in b.find_elements(
            By.CSS_SELECTOR, "#events-list li[data-kind='bundleApplied']")))
        item = browser.find_element(By.CSS_SELECTOR, "#events-list li[data-kind='bundleApplied']").text
        assert applied["revision"] in item, f"the newest is first: {item}"
        assert browser.execute_script("return window.notReloaded === true"), "the page was reloaded"
        kind = browser.find_element(By.CSS_SELECTOR, "#events-filter input[name='kind']")
        kind.send_keys("bundleApplied")
        visible = [li for li in browser.find_elements(By.CSS_SELECTOR, "#events-list li") if li.is_displayed()]
        assert visible and all("bundleApplied" in li.text for li in visible), [li.text for li in visible]
        shot("events")

    @check("the events view resumes after the service restarts, and loses nothing recorded meanwhile")
    def events_resume():
        global server
        port = base.rsplit(":", 1)[1]
        server.terminate()
        server.wait(timeout=15)
        wait.until(lambda b: b.find_element(By.ID, "events-status").get_attribute("data-live") == "false")
        # Meanwhile another process puts the directory's bundle back in force.
        run("apply", "--bundle", bundle, "--state", state)
        log = open(os.path.join(work, "serve-2.log"), "w")
        server = subprocess.Popen(
            [binary, "serve", "--state", state, "--listen", "127.0.0.1:" + port, "--master-key-file", master],
            cwd=work, stdout=log, stderr=subprocess.STDOUT)
        wait.until(lambda b: any(
            revision in li.text for li in b.find_elements(By.CSS_SELECTOR, "#events-list li[data-kind='bundleApplied']")))
        assert browser.execute_script("return window.notReloaded === true"), "the page was reloaded"
        ids = sorted(int(li.get_attribute("data-id")) for li in browser.find_elements(By.CSS_SELECTOR, "#events-list li"))
        assert ids == list(range(ids[0], ids[-1] + 1)), f"events were lost across the restart: {ids}"
        wait.until(lambda b: b.find_element(By.ID, "events-status").get_attribute("data-live") == "true")

    @check("a wipe with an admin token: Enter, Enter and Escape do nothing; a reason and the account's name typed back, then Confirm, wipe it, audited")
    def wipe():
        def not_wiped(why):
            status, body = api("GET", "/v1/accounts/bob%40contoso.com/status", admin_token)
            assert all(i["wipedAt"] is None for i in body["identifiers"]), why
        visit("/accounts/bob%40contoso.com", "button[data-action='wipe']")
        browser.find_element(By.CSS_SELECTOR, "button[data-action='wipe']").click()
        wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".confirm button.danger"))
        assert "cannot be undone" in browser.find_element(By.CSS_SELECTOR, ".confirm").text
        focused = browser.switch_to.active_element
        assert "danger" not in (focused.get_attribute("class") or ""), "the red Confirm has the focus"
        focused.send_keys(Keys.ENTER)
        browser.switch_to.active_element.send_keys(Keys.ENTER)
        time.sleep(0.5)
        not_wiped("Enter, Enter wiped the account")
        browser.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda b: not b.find_elements(By.CSS_SELECTOR, ".confirm"))
        not_wiped("Escape wiped the account")
        browser.find_element(By.CSS_SELECTOR, "button[data-action='wipe']").click()
        wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".confirm input[name='typed']"))
        browser.find_element(By.CSS_SELECTOR, ".confirm input[name='reason']").send_keys("offboarding ticket 4711")
        typed = browser.find_element(By.CSS_SELECTOR, ".confirm input[name='typed']")
        typed.send_keys("bob@contoso.co")
        assert not browser.find_element(By.CSS_SELECTOR, ".confirm button.danger").is_enabled(), "a wrong name confirms"
        shot("wipe-confirm")
        typed.send_keys("m")
        wait.until(lambda b: b.find_element(By.CSS_SELECTOR, ".confirm button.danger").is_enabled())
        not_wiped("wiped before Confirm")
        browser.find_element(By.CSS_SELECTOR, ".confirm button.danger").click()
        wait.until(lambda b: "was wiped" in b.find_element(By.ID, "flash").text)
        status, body = api("GET", "/v1/accounts/bob%40contoso.com/status", admin_token)
        assert any(i["wipedAt"] for i in body["identifiers"]), body
        audit = run("audit", "--state", state).stdout
        assert "ops lead" in audit and "wipe" in audit and "offboarding ticket 4711" in audit, audit[-2000:]

    @check("rotate alice's key with an admin token: the account page shows version 2")
    def rotate():
        visit("/accounts/alice%40contoso.com", "button[data-action='rotate']")
        assert "v1" in browser.find_element(By.ID, "identifiers").text
        browser.find_element(By.CSS_SELECTOR, "button[data-action='rotate']").click()
        wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".confirm button.danger"))
        browser.find_element(By.CSS_SELECTOR, ".confirm button.danger").click()
        wait.until(lambda b: "v1, v2" in b.find_element(By.ID, "identifiers").text)
        assert "key version 2" in browser.find_element(By.ID, "flash").text
        shot("account-admin")

    @check("run a candidate in shadow from the Shadow tab: live decisions' disagreements appear without a reload; stop it")
    def shadow():
        visit("/shadow", "#shadow-files")
        assert "No shadow bundle has been set" in view_text(), view_text()
        folder = os.path.join(work, "candidate")
        paths = [os.path.join(folder, name) for name in sorted(os.listdir(folder)) if name.endswith(".json")]
        browser.find_element(By.ID, "shadow-files").send_keys("\n".join(paths))
        drawn_after(browser.find_element(By.CSS_SELECTOR, "#shadow-form button").click, "#shadow")
        assert "set: every replica decides under it too" in browser.find_element(By.ID, "flash").text
        # The service reads the shadow within a moment; then bob prints twice (blocked by the
        # policy in force, every staff member's print blocked; allowed by the candidate).
        deadline = time.time() + 10
        while time.time() < deadline:
            status, body = api("GET", "/v1/bundle/shadow", read_token)
            if body["shadow"]["decidingHere"]:
                break
            time.sleep(0.1)
        for _ in range(2):
            status, body = api("POST", "/v1/decisions", decide_token, {"action": "print", "account": "bob@contoso.com"})
            assert status == 200 and body["allowed"] is False, (status, body)
        # The section reloads itself (every 5 seconds while the shadow runs): no reload here.
        browser.find_element(By.ID, "shadow-title").click()
        WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
            lambda b: "loosens: print block → allow" in b.find_element(By.ID, "shadow-flips").text)
        row = browser.find_element(By.CSS_SELECTOR, "#shadow-flips tbody tr").text
        assert "bob@contoso.com" in row and "printBlocked is true" in row and "printBlocked is false" in row, row
        assert "Agreed 0" in browser.find_element(By.ID, "shadow-summary").text
        shot("shadow")
        browser.find_element(By.CSS_SELECTOR, "button[data-action='shadow-stop']").click()
        wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".confirm button.danger"))
        browser.find_element(By.CSS_SELECTOR, ".confirm button.danger").click()
        wait.until(lambda b: "stopped by" in b.find_element(By.ID, "shadow-origin").text)
        assert not browser.find_elements(By.CSS_SELECTOR, "button[data-action='shadow-stop']")
        metrics = __import__("urllib.request").request.urlopen(base + "/metrics").read().decode()
        assert 'custody_shadow_disagreements_total{setting="printBlocked",action="print"} 2' in metrics, \
            [line for line in metrics.splitlines() if "shadow" in line]

    @check("the phone layout (390x844) shows the account page without losing the settings")
    def phone():
        browser.set_window_size(390, 844)
        visit("/accounts/alice%40contoso.com", "tr[data-setting='printBlocked']")
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 400, f"the page is {width} px wide"
        shot("account-phone")
        visit("/accounts/alice%40contoso.com/grid", "details.cell")
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 400, f"the grid is {width} px wide"
        shot("grid-phone")
        for address, selector in [("/diff", "[name='from']"), ("/overview", "#revision"), ("/events", "#events-status"),
                                  ("/whatif?action=saveTo", "[name='owner']"), ("/accounts", "[name='q']"),
                                  ("/shadow", "#shadow-origin")]:
            visit(address, selector)
            width = browser.execute_script("return document.documentElement.scrollWidth")
            assert width <= 400, f"{address} is {width} px wide on a phone"
        browser.set_window_size(1280, 800)

    @check("sign out: back to sign-in, the token forgotten")
    def sign_out():
        visit("/overview", "#signout")
        browser.find_element(By.ID, "signout").click()
        wait.until(lambda b: b.find_elements(By.ID, "signin-form"))
        assert browser.execute_script("return sessionStorage.getItem('custody-token')") is None

    browser.quit()
finally:
    if server is not None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    shutil.rmtree(work, ignore_errors=True)

failed = [name for name, error in results if error is not None]
print(f"console: {len(results) - len(failed)} passed, {len(failed)} failed")
sys.exit(1 if failed or not results else 0)
