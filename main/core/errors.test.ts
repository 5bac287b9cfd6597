import { describe, expect, it } from 'vitest';
import { DmsError, plainMessage, type Moment } from './errors.js';

const refused = new DmsError('rejected', 'The server refused GET /x: page_size too big. (code 400001).', {
  serverMessage: 'page_size must be an integer from 1 to 100 (got "200").',
});
const refusedConnection = new DmsError('network', 'Could not reach the server', {
  cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
});
/** What undici's fetch gives when the laptop has no connection: the cause's cause has the code. */
const offline = (code: string) =>
  new DmsError('network', 'Could not reach the server', {
    cause: Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error(`getaddrinfo ${code} media.example.com`), { code }),
    }),
  });
const forbidden = new DmsError('auth', 'The server refused access (HTTP 403)', {
  status: 403,
  path: '/wayline/api/v1/workspaces/ws-9/waylines',
});
const unauthorised = new DmsError('auth', 'The server refused the sign-in token (HTTP 401)', { status: 401 });

describe('plainMessage: the words of the moment a failure is shown in', () => {
  it.each<[string, DmsError, Moment, RegExp, RegExp]>([
    [
      'a refused upload',
      refused,
      'upload',
      /^The server refused this file: page_size .*"200"\)\. Fix the cause, then choose Retry\.$/,
      /\.\./,
    ],
    [
      'a refused listing',
      refused,
      'request',
      /^The server refused the request: page_size .*"200"\)\.$/,
      /file|Retry|\.\./,
    ],
    [
      'a wrong password',
      unauthorised,
      'sign-in',
      /did not accept this user name and password/,
      /no longer|nothing is lost/,
    ],
    ['an expired token during uploads', unauthorised, 'upload', /no longer accepts your sign-in/, /password/],
    [
      'an expired token on a listing',
      unauthorised,
      'request',
      /Sign in again: drone-media-sync login/,
      /uploads/,
    ],
    [
      'another workspace (403), any moment',
      forbidden,
      'upload',
      /does not let this sign-in into workspace ws-9/,
      /no longer/,
    ],
    ['a closed port at sign-in', refusedConnection, 'sign-in', /^Nothing answers at this address/, /upload/],
    [
      'no internet (the name cannot be looked up) at sign-in',
      offline('ENOTFOUND'),
      'sign-in',
      /^The server's name cannot be looked up: this computer may have no internet connection, or the address is mistyped/,
      /Nothing answers|running/,
    ],
    [
      'a DNS server not answering, on a request',
      offline('EAI_AGAIN'),
      'request',
      /no internet connection/,
      /running/,
    ],
    [
      'no network at all (no route), on a request',
      offline('ENETUNREACH'),
      'request',
      /^There is no network route to the server: check that this computer is connected/,
      /running/,
    ],
    [
      'no internet during uploads',
      offline('ENOTFOUND'),
      'upload',
      /uploads continue by themselves/,
      /mistyped/,
    ],
    [
      'a closed port during uploads',
      refusedConnection,
      'upload',
      /uploads continue by themselves/,
      /address/,
    ],
    [
      'not HTTP at sign-in',
      new DmsError('malformed-response', 'The answer is not HTTP'),
      'sign-in',
      /not like a Drone Media Sync server/,
      /retried|proxy page\?\)\. Uploads/,
    ],
    [
      'a server failure on a listing',
      new DmsError('server', 'HTTP 500'),
      'request',
      /Try again in a while/,
      /Uploads/,
    ],
  ])('%s', (_what, err, moment, says, never) => {
    const text = plainMessage(err, moment);
    expect(text).toMatch(says);
    expect(text).not.toMatch(never);
  });

  it("an error's own sentence wins in every moment", () => {
    const e = new DmsError('auth', 'x', { plain: 'Not signed in to https://a. Run: drone-media-sync login' });
    for (const m of ['upload', 'sign-in', 'request'] as const) expect(plainMessage(e, m)).toBe(e.plain);
  });
});
