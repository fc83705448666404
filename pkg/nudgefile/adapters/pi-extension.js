// turnwatch's extension for pi (docs/nudges.md). The sidecar puts it at
// /run/turnwatch/pi-extension.js; a template loads it with
//   pi --mode json -e /run/turnwatch/pi-extension.js ...
// It asks turnwatch-hook (--cli adapter: JSON on stdin and stdout) after
// each tool call for the nudges the model has not seen, and appends them to
// the tool's result; before each call, for the sidecar's verdict: a refused
// call is blocked and the run aborted. It never breaks a tool call: a
// missing or failing hook is no nudge and no refusal.
import { execFileSync } from "node:child_process";

const DIR = process.env.TURNWATCH_NUDGE_DIR || "/run/turnwatch";
const HOOK = DIR + "/bin/turnwatch-hook";

function hook(event) {
  try {
    const out = execFileSync(HOOK, ["--cli", "adapter"], {
      input: JSON.stringify(event),
      encoding: "utf8",
      timeout: 10000,
      stdio: ["pipe", "pipe", "ignore"],
    });
    return JSON.parse(out || "{}");
  } catch {
    return {};
  }
}

export default function (pi) {
  let stopped = ""; // once a call is refused, every later call is too

  pi.on("tool_result", (event) => {
    const r = hook({ event: "post", call: event.toolCallId, tool: event.toolName });
    if (!r.context) return undefined;
    return { content: [...(event.content || []), { type: "text", text: r.context }] };
  });

  // pi blocks the call when this handler throws: catch everything.
  pi.on("tool_call", (event, ctx) => {
    try {
      if (!stopped) {
        const r = hook({ event: "pre", call: event.toolCallId, tool: event.toolName, args: event.input });
        if (r.refuse) stopped = r.message || "turnwatch refused this call";
      }
      if (!stopped) return undefined;
      ctx.abort(); // no further model request: the run ends
      return { block: true, reason: stopped };
    } catch {
      return undefined;
    }
  });
}
