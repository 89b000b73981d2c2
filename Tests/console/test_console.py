"""The operator's web console in a real browser (Debian's Chromium through Playwright), against the `paperboy serve`
that Tests/console/run.sh starts: one broadcast of 401 devices at 2 a second, shared by the tests in this order."""

import os
import re

import pytest
from playwright.sync_api import expect, sync_playwright

BASE = os.environ["CONSOLE_BASE_URL"]
OPERATOR = os.environ["CONSOLE_OPERATOR_TOKEN"]
VIEWER = os.environ["CONSOLE_VIEWER_TOKEN"]
BROADCAST = os.environ["CONSOLE_BROADCAST_ID"]
DEVICE = os.environ["CONSOLE_DEVICE_TOKEN"]
# A second broadcast, of the evening edition, still running when the last tests sign everyone out.
SECOND = os.environ["CONSOLE_SECOND_BROADCAST_ID"]
SCREENSHOT = os.environ.get("CONSOLE_SCREENSHOT")


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        # Debian's Chromium: Playwright cannot download its own browser here. As root, Chromium needs --no-sandbox.
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        yield browser
        browser.close()


class Session:
    """A browser context signed in as one role, collecting every error the pages log."""

    def __init__(self, browser, token, name, width=1280, height=900):
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        self.errors = []
        self.page.on("console", lambda message: self.errors.append(message.text) if message.type == "error" else None)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(BASE + "/console")
        expect(self.page).to_have_url(BASE + "/console/sign-in")
        self.page.fill("input[name=token]", token)
        self.page.fill("input[name=name]", name)
        self.page.click("button[type=submit]")
        expect(self.page).to_have_url(BASE + "/console/broadcasts")

    def close(self):
        self.context.close()
        assert self.errors == [], f"errors in the browser's console: {self.errors}"


@pytest.fixture(scope="session")
def operator(browser):
    session = Session(browser, OPERATOR, "ana")
    yield session
    session.close()


@pytest.fixture(scope="session")
def viewer(browser):
    session = Session(browser, VIEWER, "vic")
    yield session
    session.close()


def test_sign_in_lists_the_running_broadcast(operator):
    page = operator.page
    expect(page.locator("header .who")).to_contain_text("operator (ana)")
    running = page.locator("section", has_text="Running")
    expect(running.locator(f"a[href='/console/broadcasts/{BROADCAST}']")).to_be_visible()


def test_a_wrong_token_is_refused(browser):
    context = browser.new_context()
    page = context.new_page()
    page.goto(BASE + "/console/sign-in")
    page.fill("input[name=token]", "0" * 48)
    page.click("button[type=submit]")
    expect(page.locator("[role=alert]")).to_contain_text("neither the operator's nor the viewer's")
    page.goto(BASE + "/console/broadcasts")
    expect(page).to_have_url(BASE + "/console/sign-in")
    context.close()


def sent(page):
    return int(page.locator("[data-count=sent]").inner_text().replace(",", ""))


def test_the_live_page_updates_while_you_watch(operator):
    page = operator.page
    page.goto(f"{BASE}/console/broadcasts/{BROADCAST}")
    expect(page.locator("[data-state]")).to_have_attribute("data-state", "running")
    first = sent(page)
    chart = page.locator("[data-live=charts] svg.chart").first.inner_html()
    # Without reloading: the stream swaps in the new numbers and chart as the sampler records them (every 5 s).
    page.wait_for_function(
        "first => Number(document.querySelector('[data-count=sent]').textContent.replace(/,/g, '')) > first",
        arg=first,
        timeout=30_000,
    )
    assert sent(page) > first
    page.wait_for_function(
        "old => document.querySelector('[data-live=charts] svg.chart').innerHTML !== old", arg=chart, timeout=15_000
    )
    expect(page.locator("[role=status]").first).to_contain_text("Live: updated")
    # The rate line has points once two samples exist.
    page.wait_for_function(
        "() => (document.querySelector('polyline.s-sent')?.getAttribute('points') || '').split(' ').length >= 2",
        timeout=20_000,
    )
    if SCREENSHOT:
        page.screenshot(path=SCREENSHOT, full_page=False)


def test_a_device_is_looked_up(operator):
    page = operator.page
    page.goto(BASE + "/console/devices")
    page.fill("input[name=token]", DEVICE)
    # The look-up form's own button: the navigation's sign-out form has a submit button too.
    page.click("form[action='/console/devices'] button[type=submit]")
    device = page.locator("section.device")
    expect(device).to_contain_text("com.example.console")
    expect(device).to_contain_text("Europe/Paris")
    expect(device).to_contain_text("iPhone15,2")
    expect(device).to_contain_text("active")
    # Looked up by a form posted with the CSRF token: the token is in no URL, so in no proxy log or history.
    assert DEVICE not in page.url


def test_the_plan_and_a_dry_run(operator):
    page = operator.page
    page.goto(BASE + "/console/plan")
    morning = page.locator("select[name=publication] option", has_text=re.compile("^morning")).first.inner_text()
    page.select_option("select[name=publication]", label=morning)
    page.fill("input[name=window]", "10m")
    page.click("form[action='/console/plan'] button[type=submit]")
    expect(page.locator("main")).to_contain_text("401 devices in 16 cohorts")
    expect(page.locator("figure svg.chart rect.bar").first).to_be_attached()
    page.click("button[name=dryRun]")
    expect(page.locator("main")).to_contain_text("Dry run of edition")


def test_a_viewer_cannot_cancel(viewer):
    page = viewer.page
    page.goto(f"{BASE}/console/broadcasts/{BROADCAST}")
    expect(page.locator("a", has_text="Cancel broadcast")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("only an operator can cancel")
    response = page.goto(f"{BASE}/console/broadcasts/{BROADCAST}/cancel")
    assert response.status == 403
    # The browser logs the 403 it was just shown as an error: expected here, so not counted against the page.
    viewer.errors = [error for error in viewer.errors if "status of 403" not in error]
    expect(page.locator("main")).to_contain_text("Only an operator can cancel")
    # Posting the form by hand, with the viewer's own CSRF token, is refused too.
    page.goto(BASE + "/console/broadcasts")
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    refused = page.request.post(f"{BASE}/console/broadcasts/{BROADCAST}/cancel", form={"csrf": csrf})
    assert refused.status == 403
    page.goto(f"{BASE}/console/broadcasts/{BROADCAST}")
    expect(page.locator("[data-state]")).to_have_attribute("data-state", "running")


def test_an_operator_cancels_with_a_confirmation(operator):
    page = operator.page
    page.goto(f"{BASE}/console/broadcasts/{BROADCAST}")
    page.click("text=Cancel broadcast…")
    expect(page.locator("h1")).to_contain_text("Cancel")
    page.click("text=Yes, cancel the broadcast")
    expect(page.locator("[data-state]")).to_have_attribute("data-state", "cancelled")
    expect(page.locator(".flash")).to_contain_text("Cancelled")
    expect(page.locator("ul.actions")).to_contain_text("operator (ana)")
    expect(page.locator("ul.actions")).to_contain_text("cancel broadcast")
    page.goto(BASE + "/console/audit")
    expect(page.locator("#audit-log")).to_contain_text("cancel broadcast")
    expect(page.locator("#audit-log")).to_contain_text("operator (ana)")
    # The sessions signed in now, kept on the server: the operator's own marked, each with its End button.
    expect(page.locator("#sessions")).to_contain_text("(yours)")
    expect(page.locator("#sessions button", has_text="End").first).to_be_visible()


@pytest.mark.parametrize(
    "path", ["/console/broadcasts", f"/console/broadcasts/{BROADCAST}", "/console/plan", "/console/devices", "/console/apps", "/console/workers"]
)
def test_usable_on_a_phone(browser, path):
    session = Session(browser, VIEWER, "phone", width=375, height=740)
    page = session.page
    page.goto(BASE + path)
    page.wait_for_load_state("load")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{path} scrolls sideways by {overflow} px at 375 px"
    session.close()


def test_signing_out_ends_the_session_for_every_copy_of_its_cookie(browser):
    session = Session(browser, OPERATOR, "copied")
    # A copy of the cookie, as a stolen one would be.
    thief = browser.new_context()
    thief.add_cookies(session.context.cookies())
    stolen = thief.new_page()
    stolen.goto(BASE + "/console/broadcasts")
    expect(stolen).to_have_url(BASE + "/console/broadcasts")
    session.page.click("header .who button[type=submit]")
    expect(session.page).to_have_url(BASE + "/console/sign-in")
    stolen.goto(BASE + "/console/broadcasts")
    expect(stolen).to_have_url(BASE + "/console/sign-in")
    thief.close()
    session.close()


def test_signing_everyone_out_stops_live_pages(browser):
    """Last: it ends every session, the fixtures' too."""
    watcher = Session(browser, VIEWER, "watcher")
    watcher.page.goto(f"{BASE}/console/broadcasts/{SECOND}")
    expect(watcher.page.locator("[data-state]")).to_have_attribute("data-state", "running")
    expect(watcher.page.locator("[role=status]").first).to_contain_text("Live", timeout=30_000)
    admin = Session(browser, OPERATOR, "lead")
    admin.page.goto(BASE + "/console/audit")
    admin.page.click("text=Sign out everyone")
    expect(admin.page).to_have_url(BASE + "/console/sign-in")
    # The live page's stream checks its session every 10 s: it stops and says so.
    expect(watcher.page.locator("[data-signed-out]")).to_have_count(1, timeout=30_000)
    expect(watcher.page.locator("[role=status]").first).to_contain_text("Signed out")
    watcher.page.goto(BASE + "/console/broadcasts")
    expect(watcher.page).to_have_url(BASE + "/console/sign-in")
    admin.page.goto(BASE + "/console/audit")
    expect(admin.page).to_have_url(BASE + "/console/sign-in")
    # The browser logs the stream's end as an error: expected here.
    watcher.errors = [error for error in watcher.errors if "EventSource" not in error]
    watcher.close()
    admin.close()
