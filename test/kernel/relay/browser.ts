// A browser as the relay's pages see one, over real HTTP: it keeps the session cookie the relay
// sets, sends Origin on form posts (as browsers do), follows nothing by itself (tests look at each
// redirect), and reads the CSRF token out of the page's form like a form submission would.
export interface PageAnswer {
  status: number;
  location: string | null;
  setCookie: string | null;
  html: string;
}

export class TestBrowser {
  readonly origin: string;
  cookie: string | undefined;

  constructor(origin: string) {
    this.origin = origin;
  }

  async get(path: string): Promise<PageAnswer> {
    const response = await fetch(path.startsWith('http') ? path : `${this.origin}${path}`, {
      redirect: 'manual',
      headers: this.cookie === undefined ? {} : { cookie: this.cookie },
    });
    return this.#answer(response);
  }

  /** A form post; `headers` may override or drop (value undefined) what a browser would send. */
  async post(path: string, form: Record<string, string>, headers: Record<string, string | undefined> = {}): Promise<PageAnswer> {
    const base: Record<string, string | undefined> = {
      'content-type': 'application/x-www-form-urlencoded',
      origin: this.origin,
      ...(this.cookie === undefined ? {} : { cookie: this.cookie }),
      ...headers,
    };
    const sent = Object.fromEntries(Object.entries(base).filter((e): e is [string, string] => e[1] !== undefined));
    const response = await fetch(`${this.origin}${path}`, { method: 'POST', redirect: 'manual', headers: sent, body: new URLSearchParams(form).toString() });
    return this.#answer(response);
  }

  async #answer(response: Response): Promise<PageAnswer> {
    const setCookie = response.headers.get('set-cookie');
    const match = setCookie === null ? null : /^svc_session=([^;]*)/.exec(setCookie);
    if (match) this.cookie = match[1] === '' ? undefined : `svc_session=${match[1]}`;
    return { status: response.status, location: response.headers.get('location'), setCookie, html: await response.text() };
  }

  /** GET /signin, POST the token form, keep the cookie: the redirect target. */
  async signIn(token: string, next = '/device'): Promise<PageAnswer> {
    const form = await this.get(`/signin?next=${encodeURIComponent(next)}`);
    if (form.status !== 200 || !form.html.includes('name="token"')) throw new Error(`no sign-in form: ${form.status}`);
    return this.post('/signin', { token, next });
  }
}

/** The value of the page's hidden `csrf` field. */
export function csrfOf(html: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error('the page has no CSRF field');
  return match[1]!;
}

export interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

export async function newDeviceCode(url: string): Promise<DeviceCode> {
  const response = await fetch(`${url}/v1/device/code`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  if (response.status !== 200) throw new Error(`device code: ${response.status} ${await response.text()}`);
  return (await response.json()) as DeviceCode;
}

export async function pollToken(url: string, deviceCode: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}/v1/device/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_code: deviceCode, grant_type: 'urn:ietf:params:oauth:grant-type:device_code' }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Signed in already: open the approval page for the code and press a button. */
export async function decide(browser: TestBrowser, userCode: string, decision: 'approve' | 'deny', pagePath?: string): Promise<PageAnswer> {
  const page = await browser.get(pagePath ?? `/device?user_code=${encodeURIComponent(userCode)}`);
  if (page.status !== 200) throw new Error(`approval page: ${page.status} ${page.location ?? ''}`);
  return browser.post('/device', { csrf: csrfOf(page.html), user_code: userCode, decision });
}
