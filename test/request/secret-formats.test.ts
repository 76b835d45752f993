// P11, issue 23 item 3: the secret formats redaction knows (src/request/data/secret-formats.json)
// and the shapes no format can know. Each example of the data is a test; the canaries are the
// secrets that reached the reviewer; the properties embed a fresh secret of every format, and of
// every context shape, anywhere in a command or a message, raw and as JSON text.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import data from "../../src/request/data/secret-formats.json" with { type: "json" };
import { looksLikeKey, redact } from "../../src/request/redact.ts";
import { loadSecretFormats, SECRET_FORMATS, type ShapePart } from "../../src/request/secret-formats.ts";
import { checkProperty, fuzzRuns } from "../helpers/fuzz.ts";
import { CANARIES } from "../helpers/secret-canaries.ts";

const FORMATS = SECRET_FORMATS.formats;

/** Whether one format alone finds `secret` in `text` (its own ranges cover it). */
function formatCovers(id: string, text: string, secret: string): boolean {
  const f = FORMATS.find((x) => x.id === id)!;
  f.re.lastIndex = 0;
  const at = text.indexOf(secret);
  for (let m = f.re.exec(text); m !== null; m = f.re.exec(text)) {
    const span = f.hasSecretGroup ? m.indices?.groups?.secret : m.indices?.[0];
    if (span && span[0] <= at && span[1] >= at + secret.length) return true;
  }
  return false;
}

describe("secret formats: the data", () => {
  test("every format says where it came from, and the sources are named", () => {
    assert.ok(data.sources.length >= 2);
    for (const f of FORMATS) assert.ok(f.from.length > 0, f.id);
  });

  for (const f of FORMATS) {
    test(`${f.id}: each example is found by the format itself and removed by redaction`, () => {
      for (const e of f.examples) {
        assert.ok(formatCovers(f.id, e.text, e.secret), `${f.id} alone does not find ${e.secret} in ${e.text}`);
        const out = redact(e.text);
        assert.equal(out.includes(e.secret), false, `${f.id}: ${e.text} -> ${out}`);
        assert.match(out, /\[REDACTED\]/);
      }
      for (const t of f.notSecret) assert.equal(redact(t), t, `${f.id} must leave ${t} alone`);
    });
  }

  test("a malformed entry is refused at load, naming it", () => {
    const good = structuredClone(data) as { formats: Record<string, unknown>[]; sources: unknown[] };
    const bad = (mut: (d: typeof good) => void) => {
      const d = structuredClone(good);
      mut(d);
      return () => loadSecretFormats(d);
    };
    assert.throws(
      bad((d) => (d.formats[0]!.pattern = "(")),
      /private-key: pattern does not compile/,
    );
    assert.throws(
      bad((d) => (d.formats[1]!.flags = "gx")),
      /flags may hold only/,
    );
    assert.throws(
      bad((d) => (d.formats[2]!.keywords = ["EYJ"])),
      /lower-case/,
    );
    assert.throws(
      bad((d) => (d.formats[2]!.examples = [{ text: "no secret here", secret: "abc" }])),
      /holds its secret/,
    );
    assert.throws(
      bad((d) => (d.formats[3]!.pattern = "x*")),
      /empty string/,
    );
    assert.throws(
      bad((d) => (d.formats[3]!.colour = "red")),
      /unknown field colour/,
    );
    assert.throws(
      bad((d) => (d.formats[4]!.id = d.formats[5]!.id)),
      /used twice/,
    );
    assert.throws(
      bad((d) => (d.sources = [])),
      /sources/,
    );
  });
});

describe("the secrets that reached the reviewer (issue 23) and the ones that held", () => {
  for (const c of CANARIES)
    test(c.name, () => {
      const out = redact(c.text);
      assert.equal(out.includes(c.secret), false, `${c.text} -> ${out}`);
      // As JSON text too (the reviewer's document, the audit's entry).
      const json = redact(JSON.stringify({ command: c.text }));
      assert.equal(json.includes(c.secret) || json.includes(JSON.stringify(c.secret).slice(1, -1)), false, json);
    });
});

describe("the shapes no format knows", () => {
  const cases: ReadonlyArray<[string, string]> = [
    ["sshpass -p 'a b c' ssh host", "a b c"],
    ["sshpass -pGlued9Pass ssh host", "Glued9Pass"],
    ["/usr/bin/mysql -uroot -pS3cr3t! db", "S3cr3t!"],
    ["mysqldump -pdumpPass --all-databases > x.sql", "dumpPass"],
    ["docker login --password=RegPass123 registry.example.com", "RegPass123"],
    ["docker login --password RegPass123 registry.example.com", "RegPass123"],
    ["podman login -u me -p plainpass quay.io", "plainpass"],
    ["redis-cli -a redisPass -h cache", "redisPass"],
    ["openssl pkcs12 -in a.p12 -passin pass:p12secret -nodes", "pass:p12secret"],
    ["zip -P zipPass secret.zip a.txt", "zipPass"],
    ["7z x -pSevenPass archive.7z", "SevenPass"],
    ["ldapsearch -x -D cn=admin -w ldapPass -b dc=x", "ldapPass"],
    ["keytool -list -keystore k.jks -storepass storePass", "storePass"],
    ["xfreerdp /u:admin /p:RdpPass1 /v:host", "RdpPass1"],
    ["git config --global user.password gitPassword1", "gitPassword1"],
    ["aws configure set aws_session_token FwoGZXIvYXdzEBYaDH", "FwoGZXIvYXdzEBYaDH"],
    ["gh secret set DEPLOY_KEY --body plainvalue", "plainvalue"],
    ["npm config set //registry.npmjs.org/:_authToken plainTokenValue", "plainTokenValue"],
    ["vault login -token=s.abcdefghijklmnop", "s.abcdefghijklmnop"],
    // URL userinfo, every form.
    ["git clone https://alice:hunter2pass@example.com/repo.git", "hunter2pass"],
    ["psql postgres://app:p%40ss%3Aword@db:5432/app", "p%40ss%3Aword"],
    ["redis-cli -u redis://:onlyPassword@cache:6379", "onlyPassword"],
    ["curl https://u:pa@ss@host.example/x", "pa@ss"],
    ["mongosh mongodb+srv://admin:MongoPass1@cluster0.example.net/db", "MongoPass1"],
    ["curl //Tok3nAsUser9xYz@cdn.example/a", "Tok3nAsUser9xYz"],
    ['{"url":"https:\\/\\/deploy:JsonEscaped1@host\\/x"}', "JsonEscaped1"],
    ["HTTPS://CI:UpperScheme7@HOST.EXAMPLE/", "UpperScheme7"],
    ["git remote add origin https://x-access-token:ghs_1234@github.com/o/r", "ghs_1234"],
    // Any name, when the value looks like a key.
    ["export FOO=q8ZlV3mX7rT2pK9nB4wE6yU1", "q8ZlV3mX7rT2pK9nB4wE6yU1"],
    ["config: { endpoint: 'x', seed: 'J7d9K2m4P8q1R5t3W6y0' }", "J7d9K2m4P8q1R5t3W6y0"],
    ["curl 'https://api.example.com/v1?id=7&sig2=Zx9Qw8Er7Ty6Ui5Op4As3Df2'", "Zx9Qw8Er7Ty6Ui5Op4As3Df2"],
    // Named in a sentence.
    ["the staging password is Pl4inWords, please use it", "Pl4inWords"],
  ];
  for (const [text, secret] of cases)
    test(text, () => {
      const out = redact(text);
      assert.equal(out.includes(secret), false, `${text} -> ${out}`);
    });

  test("the user of a URL stays when it is a plain name, and ordinary commands come through whole", () => {
    assert.equal(redact("git clone https://git@github.com/a/b"), "git clone https://git@github.com/a/b");
    assert.equal(redact("ssh://deploy@host.example/srv"), "ssh://deploy@host.example/srv");
    assert.match(redact("git clone https://alice:hunter2pass@example.com/repo.git"), /https:\/\/alice:\[REDACTED\]@example\.com/);
    for (const s of [
      "ls -la src",
      "git commit -m 'fix the token parser'",
      "npm run build",
      "grep -rn KEY_NAME src",
      "mkdir -p build/out",
      "git add -p src/app.ts",
      "ssh -p 2222 deploy@host",
      "docker run -p 8080:80 nginx",
      "mysql -p app",
      "sort -u names.txt",
      "git push -u origin main",
      "docker login --password-stdin < pw.txt",
      "NODE_OPTIONS=--max-old-space-size=4096 npm test",
      "PATH=/usr/local/bin:/usr/bin:/bin make",
      "IMAGE=registry.example.com/team/app:1.2.3 ./deploy.sh",
      "git log --since=2024-01-01T00:00:00 -- src/components/ButtonGroup.tsx",
      "curl https://example.com/docs/getting-started.html",
      "the user said: ThisIsTheBuildOutputFolder should stay",
    ])
      assert.equal(redact(s), s);
  });

  test("what looks like a key", () => {
    for (const k of [
      "q8ZlV3mX7rT2pK9nB4wE6yU1",
      "be04025d6311781f478dc8e7d4cf4bbd",
      "wSLpr+OBYYWybSQdCFIk9hzbtL6mD5UJ5TraAMeR",
      "OFGCUGuUagRABaHiCuQQgvQrzmxPiHzflP",
    ])
      assert.equal(looksLikeKey(k), true, k);
    for (const w of [
      "src/components/ButtonGroup.tsx",
      "--max-old-space-size=4096",
      "2024-01-01T00:00:00",
      "BuildOutputFolderName",
      "1234567890123456",
      "registry.example.com/app",
    ])
      assert.equal(looksLikeKey(w), false, w);
  });

  test("redaction is idempotent", () => {
    for (const c of CANARIES) {
      const once = redact(c.text);
      assert.equal(redact(once), once, c.name);
    }
  });
});

// ---- properties ----

function expandClass(c: string): string {
  let out = "";
  for (let i = 0; i < c.length; i++) {
    if (c[i + 1] === "-" && i + 2 < c.length) {
      for (let x = c.charCodeAt(i); x <= c.charCodeAt(i + 2); x++) out += String.fromCharCode(x);
      i += 2;
    } else out += c[i];
  }
  return out;
}

interface Made {
  readonly full: string;
  /** The random parts (what must not survive), each at least 8 characters. */
  readonly secretParts: readonly string[];
}

function shapeArb(shape: readonly ShapePart[], hasGroup: boolean): fc.Arbitrary<Made> {
  const lead = hasGroup ? shape.findIndex((p) => !Array.isArray(p)) : 0;
  const parts = shape.map((p) =>
    Array.isArray(p)
      ? fc.constantFrom(...(p as string[]))
      : fc.string({
          unit: fc.constantFrom(...expandClass((p as { chars: string }).chars)),
          minLength: (p as { min: number }).min,
          maxLength: (p as { max: number }).max,
        }),
  );
  return fc.tuple(...parts).map((xs) => ({
    full: xs.join(""),
    secretParts: xs.filter((x, i) => i >= lead && !Array.isArray(shape[i]) && x.length >= 8),
  }));
}

/** What stands before and after a secret in a command or a message. */
const BEFORE = ["", " ", "\n", "\t", "'", '"', "=", ":", "(", "`", "$(echo ", "--flag=", "echo ", "key ", '{"k":"', "curl -d x=", "<", ","];
const AFTER = ["", " ", "\n", "'", '"', ";", ")", "`", "|", "&&", ",", "}", " and", "\r\n", "#"];
const WORDS = fc
  .array(fc.constantFrom("git", "push", "the", "deploy", "npm", "run", "please", "use", "-v", "src/app.ts", "$HOME", "&&", "|", "x=1", "ok."), { maxLength: 6 })
  .map((w) => w.join(" "));

function survivors(out: string, made: Made): string[] {
  return made.secretParts.filter((p) => out.includes(p));
}

describe("property: a secret of each format, anywhere in a command or a message, never survives", () => {
  const shaped = FORMATS.filter((f) => f.shape !== undefined);
  test("every format has a shape or is covered by its examples alone", () => {
    assert.ok(
      shaped.length >= FORMATS.length - 1,
      FORMATS.filter((f) => !f.shape)
        .map((f) => f.id)
        .join(", "),
    );
  });
  for (const f of shaped)
    test(f.id, async (t) => {
      await checkProperty(
        t,
        fc.property(
          shapeArb(f.shape!, f.hasSecretGroup),
          WORDS,
          fc.constantFrom(...BEFORE),
          fc.constantFrom(...AFTER),
          WORDS,
          (made, pre, before, after, post) => {
            // Glued to a word on the left is another token; a separator always stands between them.
            const left = pre === "" ? before : `${pre}${before === "" ? " " : before}`;
            const text = `${left}${made.full}${after}${after === "" && post !== "" ? " " : ""}${post}`;
            const out = redact(text);
            assert.deepEqual(survivors(out, made), [], `${JSON.stringify(text)} -> ${JSON.stringify(out)}`);
            const json = redact(JSON.stringify({ command: text }));
            assert.deepEqual(survivors(json, made), [], `as JSON: ${json}`);
          },
        ),
        { runs: fuzzRuns(60, 0.05) },
      );
    });

  test("the canaries, anywhere in a message", async (t) => {
    await checkProperty(
      t,
      fc.property(fc.constantFrom(...CANARIES), WORDS, WORDS, fc.constantFrom("\n", " ", "; ", " && "), (c, pre, post, sep) => {
        const text = `${pre}${sep}${c.text}${sep}${post}`;
        assert.equal(redact(text).includes(c.secret), false, text);
      }),
      { runs: fuzzRuns(200, 0.1) },
    );
  });
});
