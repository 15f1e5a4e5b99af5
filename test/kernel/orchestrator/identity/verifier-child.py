# Independent verifier in Python (PyJWT): discovery over HTTP, JWKS from jwks_uri, ES256 check.
# argv: <issuer> <audience> <token>; prints {"ok": ..., "claims"|"error": ...}.
import json, sys, urllib.request
import jwt

issuer, audience, token = sys.argv[1:4]
try:
    with urllib.request.urlopen(issuer + "/.well-known/openid-configuration", timeout=10) as r:
        meta = json.load(r)
    assert meta["issuer"] == issuer, "issuer mismatch"
    key = jwt.PyJWKClient(meta["jwks_uri"]).get_signing_key_from_jwt(token)
    claims = jwt.decode(token, key.key, algorithms=["ES256"], audience=audience, issuer=issuer)
    print(json.dumps({"ok": True, "claims": claims}))
except Exception as e:  # noqa: BLE001 - report every failure to the test
    print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
