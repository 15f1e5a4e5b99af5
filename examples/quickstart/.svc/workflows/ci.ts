// CI for the quickstart: on every push to main and on pull requests.
//   build     computes a version string and hands it to later jobs as a job output
//   test      needs build; a matrix of two parts (unit, lint), each reads build's output
//   identity  needs build; asks the orchestrator (an OIDC issuer) for an identity token and
//             prints its subject claim, never the token
import { job, pr, push, workflow } from 'svc/sdk';
import { check, PARTS } from '../lib/checks.ts';

function claimsOf(token: string): Record<string, unknown> {
  const payload = token.split('.')[1] ?? '';
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

export default workflow('ci', {
  on: [push({ branches: ['main'] }), pr()],
  jobs: {
    build: job({
      runsOn: ['local'],
      steps: (s) =>
        s.step('version', async (ctx) => {
          const sha = String(ctx.event.sha ?? 'local').slice(0, 7);
          const node = (await ctx.$`node --version`).stdout.trim();
          const version = `0.1.0+${sha}`;
          console.log(`building ${version} with Node ${node}`);
          return { version };
        }),
      // Job outputs: what the jobs that need this one read with ctx.jobOutputs('build').
      outputs: (ctx) => ({ version: String(ctx.outputsOf('version')['version']) }),
    }),
    test: job({
      runsOn: ['local'],
      needs: ['build'],
      matrix: { part: PARTS },
      steps: (s) =>
        s.step('check', (ctx) => {
          const version = String(ctx.jobOutputs('build')?.['version'] ?? 'unknown');
          console.log(`testing build ${version}: ${ctx.matrix.part}`);
          for (const line of check(ctx.matrix.part)) console.log(line);
        }),
    }),
    identity: job({
      runsOn: ['local'],
      needs: ['build'],
      steps: (s) =>
        s.step('token', async (ctx) => {
          // A cloud or a registry that trusts the issuer would take this token instead of a
          // stored secret. It is masked in logs anyway; print only claims.
          const result = await ctx.svc.oidc.token({ audience: 'quickstart' });
          if (result.deferred) {
            console.log(`identity token deferred (${result.code}): the issuer will sign it later`);
            return;
          }
          const claims = claimsOf(result.token);
          console.log(`identity token subject: ${String(claims['sub'])}`);
          console.log(`issuer ${String(claims['iss'])}, audience ${String(claims['aud'])}, expires in ${result.expiresIn}s`);
        }),
    }),
  },
});
