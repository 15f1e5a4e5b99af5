// The device authorization flow of `svc login` (RFC 8628, docs/login.md): ask the Platform for a
// code pair, show the person where to approve it (and, for plain `svc login`, open that page in
// their browser), then poll at the Platform's pace until the code is approved, denied or expired.
// The Platform answers an approved poll with a new personal access token of the approver.
import { execa } from 'execa';
import { DeviceCodeAnswer, DeviceTokenAnswer, DeviceTokenError } from '../schemas/http/pats.ts';
import { compileSchema, formatIssues } from '../schemas/validate.ts';
import { AuthenticationError, NotAllowedError, UnavailableError, messageOf } from '../core/errors.ts';
import { REQUEST_TIMEOUT_MS } from './platform-client.ts';

const DEVICE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
const checkCode = compileSchema(DeviceCodeAnswer);
const checkToken = compileSchema(DeviceTokenAnswer);
const checkError = compileSchema(DeviceTokenError);

export interface DeviceLoginOptions {
  platformUrl: string;
  /** Plain `svc login`: also open the approval page in the browser. */
  openBrowser: boolean;
  /** Where the instructions go (stderr: standard output stays for --json). */
  say(line: string): void;
  env?: NodeJS.ProcessEnv;
}

async function post(platformUrl: string, path: string, body: unknown): Promise<{ status: number; body: unknown; retryAfter: string | null }> {
  let response: Response;
  try {
    response = await fetch(`${platformUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    throw new UnavailableError('SVC_ERR_CLI_PLATFORM_UNREACHABLE', `cannot reach the Platform at ${platformUrl}: ${messageOf(cause ?? error)}`);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, body: parsed, retryAfter: response.headers.get('retry-after') };
}

function badAnswer(what: string, detail: string): UnavailableError {
  return new UnavailableError('SVC_ERR_CLI_PLATFORM_BAD_ANSWER', `the Platform's ${what} does not have the expected shape (${detail}); is the CLI older than the Platform?`);
}

/** The platform's own opener: xdg-open, open, or start. False when there is none or it failed. */
export async function openInBrowser(url: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const [command, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]] : ['xdg-open', [url]];
  try {
    const result = await execa(command, args as string[], { env, stdio: 'ignore', reject: false, timeout: 15_000, windowsVerbatimArguments: process.platform === 'win32' });
    return !result.failed;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs the flow to its end: the new token (and its org and user), or a refusal. */
export async function deviceLogin(options: DeviceLoginOptions): Promise<DeviceTokenAnswer> {
  const { platformUrl, say } = options;
  const started = await post(platformUrl, '/v1/device/code', {});
  if (started.status !== 200) {
    const e = (started.body as { error?: { message?: unknown } } | undefined)?.error;
    const why = typeof e?.message === 'string' ? e.message : `it answered ${started.status}`;
    throw new UnavailableError('SVC_ERR_CLI_LOGIN_DEVICE_UNAVAILABLE', `the Platform at ${platformUrl} did not start a device login: ${why}`);
  }
  const checked = checkCode.validate(started.body);
  if (!checked.ok) throw badAnswer('device code answer', formatIssues(checked.issues));
  const code = checked.value;

  say(`To log in, open ${code.verification_uri} and enter the code ${code.user_code}`);
  say(`(or open ${code.verification_uri_complete}); the code expires in ${Math.round(code.expires_in / 60)} minutes.`);
  if (options.openBrowser) {
    const opened = await openInBrowser(code.verification_uri_complete, options.env);
    say(opened ? 'Opened the approval page in your browser; waiting for approval…' : 'Could not open a browser here; open the address above yourself. Waiting for approval…');
  } else {
    say('Waiting for approval…');
  }

  let interval = code.interval;
  const deadline = Date.now() + code.expires_in * 1000;
  for (;;) {
    // RFC 8628 3.5: wait the interval before each poll (a little over, so clocks never meet).
    await sleep(interval * 1000 + 50);
    const polled = await post(platformUrl, '/v1/device/token', { device_code: code.device_code, grant_type: DEVICE_GRANT_TYPE });
    if (polled.status === 200) {
      const token = checkToken.validate(polled.body);
      if (!token.ok) throw badAnswer('token answer', formatIssues(token.issues));
      return token.value;
    }
    if (polled.status === 429) {
      const seconds = Number(polled.retryAfter);
      interval = Math.max(interval, Number.isFinite(seconds) && seconds >= 1 ? Math.ceil(seconds) : interval);
      continue;
    }
    const refusal = checkError.validate(polled.body);
    if (!refusal.ok) throw badAnswer('token answer', `status ${polled.status}: ${formatIssues(refusal.issues)}`);
    const error = refusal.value.error;
    if (error === 'authorization_pending') {
      if (Date.now() > deadline) throw new AuthenticationError('SVC_ERR_CLI_LOGIN_EXPIRED', 'the code expired before it was approved; run "svc login" again');
      continue;
    }
    if (error === 'slow_down') {
      interval = refusal.value.interval ?? interval + 5;
      continue;
    }
    if (error === 'access_denied') throw new NotAllowedError('SVC_ERR_CLI_LOGIN_DENIED', 'the login was denied in the browser; nothing was stored');
    if (error === 'expired_token' || error === 'invalid_grant') {
      throw new AuthenticationError('SVC_ERR_CLI_LOGIN_EXPIRED', 'the code expired or was already used before this login completed; run "svc login" again');
    }
    throw badAnswer('token answer', `unknown error "${error.slice(0, 80)}"`);
  }
}
