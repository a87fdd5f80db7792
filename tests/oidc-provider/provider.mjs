// A real OpenID Connect provider for clarify's sign-in tests: the certified `oidc-provider`
// package on 127.0.0.1, with one confidential client for clarify and a few accounts whose claims
// carry an e-mail and groups.
//
//   CLARIFY_CALLBACK=http://127.0.0.1:PORT/auth/oidc/callback node provider.mjs
//
// It prints `ready <issuer>` once it listens. The login page (`/interaction/<uid>`) is a plain
// form: a person types an account's e-mail (the password field is not checked) and signs in,
// consenting to every scope asked for. As the provider's default, an ID token issued with an
// access token carries only `sub`; e-mail, name and groups are at the userinfo endpoint.
//
// For the attack tests, `POST /__tamper?mode=MODE` makes the token endpoint hand out a forged
// ID token instead of the real one until `mode=off`: `other-key` (signed by a key the provider
// never published), `other-audience`, `expired` (an hour ago), `wrong-nonce`; and
// `expired-within-skew` (20 seconds ago), which a verifier allowing for clock skew accepts.

import http from 'node:http';
import { URL } from 'node:url';
import * as jose from 'jose';
import Provider from 'oidc-provider';

const callback = process.env.CLARIFY_CALLBACK;
if (!callback) {
  console.error('provider.mjs: set CLARIFY_CALLBACK to clarify\'s /auth/oidc/callback URL');
  process.exit(2);
}
const clientSecret = process.env.CLARIFY_CLIENT_SECRET || 'clarify-test-secret';

const accounts = {
  'alice@example.com': { name: 'Alice', groups: ['sre'] },
  'bob@example.com': { name: 'Bob', groups: ['sre', 'clarify-admins'] },
  'carol@example.com': { name: 'Carol', groups: ['finance'] },
  'mallory@elsewhere.test': { name: 'Mallory', groups: ['sre'] },
};

async function signingKey(kid) {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  return { privateKey, jwk: { ...jwk, kid, alg: 'RS256', use: 'sig' } };
}

// The published key, and another with the same `kid` that the provider never published.
const real = await signingKey('k1');
const forger = await signingKey('k1');

let tamper = 'off';
let provider;

const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => {
    console.error('provider.mjs:', err);
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain' });
    }
    res.end(String(err));
  });
});

await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'clarify',
      client_secret: clientSecret,
      redirect_uris: [callback],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [real.jwk] },
  cookies: { keys: ['clarify-oidc-fixture-cookie-key'] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  features: { devInteractions: { enabled: false } },
  pkce: { required: () => true },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(_ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          email: id,
          email_verified: true,
          name: account.name,
          groups: account.groups,
        };
      },
    };
  },
});

provider.use(async (ctx, next) => {
  await next();
  if (tamper === 'off' || ctx.path !== '/token' || !ctx.body || !ctx.body.id_token) return;
  const claims = jose.decodeJwt(ctx.body.id_token);
  const now = Math.floor(Date.now() / 1000);
  let key = real.privateKey;
  if (tamper === 'other-key') key = forger.privateKey;
  if (tamper === 'other-audience') claims.aud = 'another-client';
  if (tamper === 'expired') {
    claims.iat = now - 7200;
    claims.exp = now - 3600;
  }
  if (tamper === 'expired-within-skew') claims.exp = now - 20;
  if (tamper === 'wrong-nonce') claims.nonce = 'not-the-nonce-clarify-sent';
  ctx.body = {
    ...ctx.body,
    id_token: await new jose.SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .sign(key),
  };
});

const page = (body) => `<!doctype html><html><head><meta charset="utf-8"><title>Test provider</title></head><body>${body}</body></html>`;

function readForm(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      data += chunk;
      if (data.length > 10000) reject(new Error('form too large'));
    });
    req.on('end', () => resolve(new URLSearchParams(data)));
    req.on('error', reject);
  });
}

async function handle(req, res) {
  const url = new URL(req.url, issuer);
  if (url.pathname === '/__tamper' && req.method === 'POST') {
    tamper = url.searchParams.get('mode') || 'off';
    res.writeHead(204);
    res.end();
    return;
  }
  const interaction = url.pathname.match(/^\/interaction\/([\w-]+)$/);
  if (interaction && req.method === 'GET') {
    const details = await provider.interactionDetails(req, res);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(page(`<h1>Test provider: sign in</h1>
<form method="post" action="/interaction/${details.uid}">
<label>E-mail <input id="login" name="login" type="email" autofocus></label>
<label>Password <input id="password" name="password" type="password"></label>
<button id="submit" type="submit">Sign in</button>
</form>`));
    return;
  }
  if (interaction && req.method === 'POST') {
    const details = await provider.interactionDetails(req, res);
    const form = await readForm(req);
    const login = form.get('login') || '';
    if (!accounts[login]) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page('<p id="error">No such account.</p>'));
      return;
    }
    const grant = new provider.Grant({ accountId: login, clientId: details.params.client_id });
    grant.addOIDCScope(String(details.params.scope || 'openid'));
    const grantId = await grant.save();
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: login }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
    return;
  }
  provider.callback()(req, res);
}

console.log(`ready ${issuer}`);
