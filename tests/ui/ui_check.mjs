// Drives the Prefect UI in headless Chromium the way a person would, against a server that `m1 ui`
// started and `m1 deploy` registered the project's deployments on (tests/ui/test_prefect_ui.py sets
// that up). It starts from the UI's front page and only clicks, types and reads what is on screen.
//
//   node ui_check.mjs BASE_URL SCREENSHOT_DIR
//
// Prints one line per check; exits non-zero with the failed check (and a screenshot) otherwise.
// playwright-core drives the system Chromium: no browser is downloaded.
import { chromium } from 'playwright-core';

const [base, shots] = process.argv.slice(2);
const RUN_NAME = 'ui-check';              // the config name typed into the run form
const RUN_TIMEOUT_MS = Number(process.env.UI_CHECK_RUN_TIMEOUT_MS ?? 240_000);
const DEPLOYMENTS = ['m1-run', 'm1-curate', 'm1-train-stage', 'm1-train-curriculum', 'm1-logic-calibration'];
const CONFIG_SECTIONS = ['DataConfig', 'CurateConfig', 'ModelConfig', 'TrainConfig', 'EvalConfig'];
const CRON = '0 2 * * *';

let page;
let shot = 0;

async function snap(name) {
  shot += 1;
  const path = `${shots}/${String(shot).padStart(2, '0')}-${name}.png`;
  await page.screenshot({ path, fullPage: true });
  return path;
}

function ok(message) {
  console.log(`ok: ${message}`);
}

// Wait for something on a freshly opened page; reload once if it stays on its loading screen, as a person would.
async function shown(locator) {
  try {
    await locator.waitFor();
  } catch (err) {
    if (!String(err).includes('Timeout')) throw err;
    await page.reload();
    await locator.waitFor();
  }
}

async function openDeployment(name) {
  await page.getByRole('link', { name: 'Deployments', exact: true }).first().click();
  await page.getByRole('link', { name, exact: true }).first().click();
  await page.waitForURL(/\/deployments\/deployment\//);
  await shown(page.getByRole('button', { name: 'Run', exact: true }));
}

// Submit the run form. On a busy machine the SQLite-backed server may answer 503 (database busy) and the
// form then silently stays: a person clicks Submit again. Again only once the server refused the run (or
// nothing was sent for 20 s), so a slow server does not get two.
async function submitRunForm(runName) {
  const submit = page.getByRole('button', { name: 'Submit', exact: true });
  const answers = [];
  for (let attempt = 1; attempt <= 4; attempt += 1) {
    const request = page.waitForRequest((r) => r.url().includes('/create_flow_run'), { timeout: 20_000 })
      .catch(() => null);
    await submit.click();
    const response = await (await request)?.response();
    if (response?.ok()) {
      await page.waitForURL((url) => !url.pathname.endsWith('/run'));  // back on the deployment
      return;
    }
    answers.push(response ? `${response.status()} ${(await response.text().catch(() => '')).slice(0, 200)}`
      : 'no flow run requested');
    console.log(`note: ${runName} form submitted again, the server answered ${answers.at(-1)}`);
    await page.waitForTimeout(2_000);
  }
  throw new Error(`${runName}: the run form did not start a run (server answered: ${answers.join(' | ')}; `
    + `screenshot ${await snap(`${runName}-submit`)})`);
}

// Run -> Custom run: the deployment's parameter form, filled in and submitted. Returns on the run's page.
async function customRun(runName, fill) {
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page.getByRole('menuitem', { name: /custom run/i }).click();
  await page.getByLabel('Run Name', { exact: true }).fill(runName);
  await fill();
  await submitRunForm(runName);
  // The deployment's confirmation links to the new flow run.
  await page.getByRole('link', { name: /view run/i }).or(page.getByRole('button', { name: /view run/i })).first().click();
  await page.waitForURL(/\/runs\/flow-run\//);
  await shown(page.getByText(runName, { exact: true }).first());
}

// The flow run page shows the run's state; wait for a final one (reloading, as a person would).
async function waitForFinalState(what) {
  const deadline = Date.now() + RUN_TIMEOUT_MS;
  const final = /^(Completed|Failed|Crashed|Cancelled)$/;
  while (Date.now() < deadline) {
    const badge = page.getByText(final).first();
    try {
      await badge.waitFor({ timeout: 5_000 });
      const state = (await badge.innerText()).trim();
      if (state !== 'Completed') {
        throw new Error(`${what} ended ${state} (screenshot ${await snap(`${what}-${state}`)})`);
      }
      ok(`${what} reached Completed on its flow run page`);
      return;
    } catch (err) {
      if (!String(err).includes('Timeout')) throw err;
      await page.reload();
    }
  }
  throw new Error(`${what} not Completed after ${RUN_TIMEOUT_MS / 1000}s (screenshot ${await snap(`${what}-timeout`)})`);
}

// The run's Artifacts tab lists the report; opening it renders the markdown.
async function openArtifact(key) {
  await page.reload();  // the page loaded the run's artifacts while it ran; the report comes at its end
  await page.getByRole('tab', { name: 'Artifacts' }).click();
  await page.getByRole('link', { name: new RegExp(key) }).first().click();
  await page.waitForURL(/\/artifacts\/artifact\//);
  await shown(page.getByRole('heading').first());
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(45_000);  // a busy 2-core machine
  const errors = [];
  page.on('pageerror', (err) => errors.push(String(err)));

  // 1. The front page reaches the API (the UI shows an error banner when it cannot) and lists the deployments.
  await page.goto(base);
  await page.getByRole('link', { name: 'Deployments', exact: true }).first().click();
  const noApi = page.getByText(/can't connect to server api/i).first();
  await shown(page.getByRole('link', { name: DEPLOYMENTS[0], exact: true }).first().or(noApi).first());
  if (await noApi.isVisible()) {
    throw new Error(`the UI cannot reach its API: "${await noApi.innerText()}" (screenshot ${await snap('no-api')})`);
  }
  for (const name of DEPLOYMENTS) {
    await page.getByRole('link', { name, exact: true }).first().waitFor();
  }
  ok(`deployments page lists ${DEPLOYMENTS.join(', ')} (${await snap('deployments')})`);

  // 2. m1-run: its daily 02:00 schedule, shown in words and as the cron in the schedule editor.
  await openDeployment('m1-run');
  const schedule = page.getByText(/02:00/).first();
  await schedule.waitFor();
  const scheduleText = (await schedule.innerText()).trim();
  const card = page.locator('div').filter({ hasText: scheduleText })
    .filter({ has: page.getByRole('button', { name: 'Open menu' }) }).last();
  await card.getByRole('button', { name: 'Open menu' }).click();
  await page.getByRole('menuitem', { name: 'Edit' }).click();
  const editor = page.getByRole('dialog');
  await editor.waitFor();
  const values = await editor.locator('input').evaluateAll((els) => els.map((e) => e.value));
  if (!values.includes(CRON)) {
    throw new Error(`schedule editor shows no cron ${CRON} (inputs: ${values.filter(Boolean).join(' | ')})`);
  }
  ok(`m1-run schedule "${scheduleText}", cron ${CRON} in the editor (${await snap('schedule')})`);
  await page.keyboard.press('Escape');
  await editor.waitFor({ state: 'hidden' });

  // 3. The run form is the PipelineConfig: its sections, with the values `m1 deploy` registered.
  await customRun(`${RUN_NAME}-pipeline`, async () => {
    for (const section of CONFIG_SECTIONS) {
      await page.getByText(new RegExp(`^${section}`)).first().waitFor();
    }
    const nProblems = await page.getByLabel(/^N Problems/).first().inputValue();
    if (nProblems !== '40') throw new Error(`form shows data.n_problems=${nProblems}, registered 40`);
    ok(`m1-run form shows the config sections ${CONFIG_SECTIONS.join(', ')} with the registered values`
      + ` (${await snap('run-form')})`);
    await page.getByLabel(/^Name \(Optional\)/).first().fill(RUN_NAME);
  });
  ok('m1-run started from its form');

  // 4. The run completes, its page shows the lines it logged, and its report artifact carries the name
  // typed into the form.
  await waitForFinalState('m1-run');
  await page.getByText('Logs', { exact: true }).first().click();
  await shown(page.getByText(/^report: .*report\.md$/).first());
  ok(`m1-run's page shows its log lines (${await snap('pipeline-run')})`);
  await openArtifact(`run-report-${RUN_NAME}`);
  await page.getByRole('heading', { name: `m1 run report: ${RUN_NAME}` }).waitFor();
  await page.getByRole('row', { name: /exact-dedup/ }).waitFor();
  await page.getByRole('heading', { name: 'Evaluation' }).waitFor();
  ok(`run report artifact shows curation, training and evaluation (${await snap('run-report')})`);

  // 5. Rerun one curriculum stage on demand: m1-train-stage on the data that run curated.
  await openDeployment('m1-train-stage');
  await customRun(`${RUN_NAME}-stage`, async () => {
    const stage = await page.getByLabel(/^stage/i).first().inputValue();
    if (stage !== 'reasoning') throw new Error(`stage field shows ${stage}, registered reasoning`);
    await page.getByLabel(/^Name \(Optional\)/).first().fill(RUN_NAME);
  });
  await waitForFinalState('m1-train-stage');
  await openArtifact(`${RUN_NAME}-reasoning-report`);
  await page.getByRole('heading', { name: /Training stage\s+reasoning/ }).waitFor();
  const curves = page.getByRole('img', { name: 'curves' });
  await curves.waitFor();
  const width = await curves.evaluate((img) => img.complete && img.naturalWidth);
  if (!width) throw new Error('the stage report\'s training curves image did not load');
  ok(`stage report artifact of reasoning shown with its training curves (${await snap('stage-report')})`);

  if (errors.length) console.log(`page errors (not fatal): ${errors.join(' | ')}`);
} catch (err) {
  if (page) await snap('failure').catch(() => {});
  console.error(`ui-check failed: ${err.message ?? err}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
