// The status page as a person sees it, in Debian's Chromium driven by
// playwright-core (no browser of its own is downloaded): waits until the page
// holds 10 samples with requests on every loop, then checks that each chart
// drew series pixels and the table has a row per loop, and saves a screenshot.
// With HTTPS_URL (a scalwsd on a TLS listener, self-signed, that forwards / and
// /status to the admin and serves STATIC_PATH, STATIC_BYTES long): loads the
// status page and that static file over https and checks that the browser
// spoke HTTP/2 for each (performance.getEntries(): nextHopProtocol "h2").
// Usage: node status-page.mjs ADMIN_URL OUT.png [HTTPS_URL STATIC_PATH STATIC_BYTES]
import { chromium } from "playwright-core";

const [url, out, httpsUrl, staticPath, staticBytes] = process.argv.slice(2);
if (!url || !out || (httpsUrl && !(staticPath && staticBytes))) {
    console.error("usage: node status-page.mjs ADMIN_URL OUT.png [HTTPS_URL STATIC_PATH STATIC_BYTES]");
    process.exit(2);
}
const fail = (why) => {
    console.error("status page: FAIL: " + why);
    process.exitCode = 1;
};

// playwright talks to Chromium over a pipe: no DevTools port to choose.
const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run",
           "--disable-dev-shm-usage"],
    timeout: 60000,
});
try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 1000 } });
    await page.goto(url, { timeout: 30000 });
    // The page polls /status once a second: 10 samples with every loop busy
    // is what it needs, however long a loaded machine takes (60 s bound).
    await page.waitForFunction(
        () => typeof hist !== "undefined" && hist.length >= 10 &&
              hist[hist.length - 1].rps.length > 0 &&
              hist[hist.length - 1].rps.every((v) => v > 0),
        null, { timeout: 60000, polling: 250 });
    // What it drew: per chart the pixels of a series (saturated colour; the
    // grid and labels are grey, the rest white), and the table's rows.
    const seen = await page.evaluate(() => {
        const coloured = (id) => {
            const c = document.getElementById(id);
            const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 4) {
                const mx = Math.max(d[i], d[i + 1], d[i + 2]);
                const mn = Math.min(d[i], d[i + 1], d[i + 2]);
                if (d[i + 3] > 0 && mx - mn > 40)
                    n++;
            }
            return n;
        };
        const last = hist[hist.length - 1];
        return {
            samples: hist.length, loops: last.rps.length,
            loops_with_requests: last.rps.filter((v) => v > 0).length,
            rows: document.getElementById("loops").rows.length,
            err: document.getElementById("err").textContent,
            pixels: { rps: coloured("rps"), conn: coloured("conn"), cpu: coloured("cpu") },
        };
    });
    await page.screenshot({ path: out });
    console.log("status page: " + JSON.stringify(seen) + "; screenshot " + out);
    if (seen.err)
        fail("the page shows an error: " + seen.err);
    if (seen.loops !== 2 || seen.loops_with_requests !== 2)
        fail("not every loop shows requests under load");
    if (seen.rows !== 2 + seen.loops)
        fail("the table does not show every loop (header, loops, total)");
    for (const [chart, n] of Object.entries(seen.pixels))
        if (n < 100)
            fail(`the ${chart} chart is empty (${n} series pixels)`);
    if (httpsUrl)
        await overHttps();
} catch (e) {
    fail(String(e));
} finally {
    await browser.close();
}

// The status page and a static file over https: HTTP/2 (ALPN h2) for the
// page, its /status polls and the file. The certificate is the test's own.
async function overHttps() {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await ctx.newPage();
    const nav = await page.goto(httpsUrl + "/", { timeout: 30000 });
    if (!nav || nav.status() !== 200)
        return fail("https: the status page answered " + (nav && nav.status()));
    // Two samples: the page's /status polls went over the same origin.
    await page.waitForFunction(() => typeof hist !== "undefined" && hist.length >= 2, null,
                               { timeout: 60000, polling: 250 });
    const file = await page.evaluate(async (path) => {
        const r = await fetch(path, { cache: "no-store" });
        return { status: r.status, bytes: (await r.arrayBuffer()).byteLength };
    }, staticPath);
    const entries = await page.evaluate(() =>
        performance.getEntries().filter((e) => "nextHopProtocol" in e).map((e) => ({
            name: new URL(e.name).pathname, type: e.entryType, proto: e.nextHopProtocol })));
    console.log("https: " + JSON.stringify({ file, entries: entries.slice(0, 8), n: entries.length }));
    if (file.status !== 200 || file.bytes !== Number(staticBytes))
        fail(`https: ${staticPath}: ${file.status}, ${file.bytes} bytes (want ${staticBytes})`);
    const want = [["navigation", "/"], ["resource", "/status"], ["resource", staticPath]];
    for (const [type, name] of want)
        if (!entries.some((e) => e.type === type && e.name === name))
            fail(`https: no ${type} entry for ${name}`);
    for (const e of entries)
        if (e.proto !== "h2")
            fail(`https: ${e.type} ${e.name} went over ${JSON.stringify(e.proto)}, not h2`);
    await ctx.close();
}
