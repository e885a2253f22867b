// ragstrata web page: ask a question, stream the answer (server-sent events over fetch, so the
// API key travels in a header), show citations as cards with the quoted sentence highlighted,
// refusals clearly, and each retriever's rank. Text from documents is only ever inserted with
// textContent (never innerHTML), so a document cannot inject markup into the page.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY_STORAGE = "ragstrata.apiKey";

function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

function headers(extra) {
  return Object.assign({ Authorization: "Bearer " + apiKey() }, extra || {});
}

async function errorMessage(response) {
  try {
    const body = await response.json();
    if (body && body.error) return `${body.error.code}: ${body.error.message}`;
  } catch (_) {
    // not JSON
  }
  return `HTTP ${response.status}`;
}

function setStatus(text) {
  $("status").textContent = text;
}

async function loadCollections() {
  const select = $("collection");
  if (!apiKey()) {
    setStatus("Enter an API key to start.");
    return;
  }
  const response = await fetch("/v1/collections", { headers: headers() });
  if (!response.ok) {
    setStatus(await errorMessage(response));
    return;
  }
  const data = await response.json();
  const previous = select.value;
  select.replaceChildren();
  for (const c of data.collections) {
    const option = document.createElement("option");
    option.value = c.name;
    const noun = c.documents === 1 ? "document" : "documents";
    option.textContent = `${c.name} (${c.documents} ${noun})`;
    select.append(option);
  }
  if (previous) select.value = previous;
  $("tenant").textContent = `tenant: ${data.tenant}`;
  setStatus(data.collections.length ? "" : "No collection yet: add documents below.");
}

// ------------------------------------------------------------------ server-sent events
async function* readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      yield { event, data: JSON.parse(data.join("\n")) };
    }
  }
}

// ------------------------------------------------------------------ rendering
function resetAnswer() {
  delete document.body.dataset.state;
  $("answer-box").hidden = false;
  $("answer").textContent = "";
  $("answer").hidden = false;
  $("refusal").hidden = true;
  $("refusal-text").textContent = "";
  $("citations").replaceChildren();
  $("citations-title").hidden = true;
  $("explain").hidden = true;
  $("explain-table").tBodies[0].replaceChildren();
}

function clearAnswer() {
  // another collection: the answer on screen was about the previous one
  resetAnswer();
  $("answer-box").hidden = true;
  setStatus("");
}

function where(item) {
  const heading = (item.heading_path || []).join(" > ");
  return heading ? `${item.source} > ${heading}` : item.source;
}

function rankText(explain, name) {
  const e = explain && explain[name];
  return e ? `${e.rank} / ${e.score.toFixed(3)}` : "-";
}

function citationCard(c) {
  const card = document.createElement("article");
  card.className = "citation-card";
  card.id = `citation-${c.label}`;
  card.dataset.label = String(c.label);

  const head = document.createElement("header");
  const label = document.createElement("span");
  label.className = "label";
  label.textContent = `[${c.label}]`;
  const source = document.createElement("span");
  source.className = "source";
  source.textContent = where(c);
  head.append(label, " ", source);
  if (c.verified === false) {
    // an LLM claim citing this source was not supported by it (docs/generation.md)
    const flag = document.createElement("span");
    flag.className = "unverified";
    flag.textContent = "not verified";
    flag.title = "The sentence citing this source was not found to be supported by it.";
    head.append(" ", flag);
  }

  const passage = document.createElement("blockquote");
  passage.className = "passage";
  if (c.highlight_start !== null && c.highlight_end !== null) {
    const mark = document.createElement("mark");
    mark.className = "cited";
    mark.textContent = c.passage.slice(c.highlight_start, c.highlight_end);
    passage.append(
      c.passage.slice(0, c.highlight_start),
      mark,
      c.passage.slice(c.highlight_end),
    );
  } else {
    const mark = document.createElement("mark");
    mark.className = "cited";
    mark.textContent = c.quote;
    passage.append(mark);
  }

  const foot = document.createElement("footer");
  foot.className = "ranks muted";
  foot.textContent =
    `chars ${c.start}-${c.end} · dense rank ${rankText(c.explain, "dense")}` +
    ` · BM25 rank ${rankText(c.explain, "bm25")}`;
  card.append(head, passage, foot);
  return card;
}

function renderAnswerLabels(text) {
  // the streamed plain text becomes text with [n] linked to its citation card
  const answer = $("answer");
  answer.replaceChildren();
  for (const part of text.split(/(\[\d+\])/)) {
    const m = /^\[(\d+)\]$/.exec(part);
    if (m) {
      const link = document.createElement("a");
      link.href = `#citation-${m[1]}`;
      link.className = "cite-ref";
      link.textContent = part;
      answer.append(link);
    } else if (part) {
      answer.append(part);
    }
  }
}

function renderExplain(hits) {
  const body = $("explain-table").tBodies[0];
  for (const h of hits) {
    const row = body.insertRow();
    for (const value of [
      String(h.rank),
      where(h),
      h.score.toFixed(4),
      rankText(h.explain, "dense"),
      rankText(h.explain, "bm25"),
    ]) {
      row.insertCell().textContent = value;
    }
  }
  $("explain").hidden = false;
}

// ------------------------------------------------------------------ ask
async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  const collection = $("collection").value;
  if (!question) return;
  if (!collection) {
    setStatus("Choose a collection first.");
    return;
  }
  resetAnswer();
  $("ask").disabled = true;
  setStatus("Searching…");
  try {
    const response = await fetch(`/v1/collections/${encodeURIComponent(collection)}/ask`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify({ question, stream: true, explain: true }),
    });
    if (!response.ok) {
      setStatus(await errorMessage(response));
      $("answer-box").hidden = true;
      document.body.dataset.state = "error";
      return;
    }
    let text = "";
    for await (const { event: name, data } of readEvents(response)) {
      if (name === "token") {
        text += data.text;
        $("answer").textContent = text;
        setStatus("Answering…");
      } else if (name === "citations") {
        for (const c of data.citations) $("citations").append(citationCard(c));
        $("citations-title").hidden = data.citations.length === 0;
      } else if (name === "explain") {
        renderExplain(data.hits);
      } else if (name === "done") {
        if (data.refusal) {
          $("answer").hidden = true;
          $("refusal-text").textContent = data.answer;
          $("refusal").hidden = false;
          document.body.dataset.state = "refused";
        } else {
          renderAnswerLabels(data.answer);
          document.body.dataset.state = "answered";
        }
        const total = data.timings_ms && data.timings_ms.total;
        let status = total ? `Done in ${Math.round(total)} ms.` : "Done.";
        if (data.usage) {
          status += ` ${data.generator}: ${data.usage.prompt_tokens} prompt + ` +
            `${data.usage.completion_tokens} answer tokens.`;
        }
        if (data.conflict) {
          const kept = (data.conflicts || []).map((c) => c.kept).join(", ");
          status += ` Sources disagree across versions; used the newest (${kept}).`;
        }
        setStatus(status);
      } else if (name === "error") {
        // the stream broke off after it started (e.g. the LLM server failed)
        setStatus(`${data.error.code}: ${data.error.message}`);
        document.body.dataset.state = "error";
      }
    }
  } catch (err) {
    setStatus(`Error: ${err}`);
    document.body.dataset.state = "error";
  } finally {
    $("ask").disabled = false;
  }
}

// ------------------------------------------------------------------ upload
async function upload(event) {
  event.preventDefault();
  const collection = $("upload-collection").value.trim() || $("collection").value;
  const files = $("upload-files").files;
  if (!collection || !files.length) {
    $("upload-status").textContent = "Choose a collection name and files.";
    return;
  }
  const form = new FormData();
  for (const f of files) form.append("files", f, f.name);
  $("upload").disabled = true;
  try {
    const response = await fetch(`/v1/collections/${encodeURIComponent(collection)}/documents`, {
      method: "POST",
      headers: headers(),
      body: form,
    });
    if (!response.ok) {
      $("upload-status").textContent = await errorMessage(response);
      return;
    }
    let job = await response.json();
    while (!["succeeded", "partial", "failed", "cancelled"].includes(job.state)) {
      const p = job.progress;
      $("upload-status").textContent =
        `${job.state}: ${p.files_done}/${p.files_total} files, ${p.chunks_embedded} chunks`;
      await new Promise((resolve) => setTimeout(resolve, 500));
      const poll = await fetch(`/v1/jobs/${job.job_id}`, { headers: headers() });
      if (!poll.ok) {
        $("upload-status").textContent = await errorMessage(poll);
        return;
      }
      job = await poll.json();
    }
    $("upload-status").textContent = `Upload ${job.state}.`;
    const list = $("upload-files-status");
    list.replaceChildren();
    for (const f of job.files) {
      const item = document.createElement("li");
      item.className = f.status;
      item.textContent = f.status === "failed"
        ? `${f.name}: failed (${f.code}) ${f.reason}`
        : `${f.name}: indexed`;
      list.append(item);
    }
    await loadCollections();
    $("collection").value = collection;
  } finally {
    $("upload").disabled = false;
  }
}

// ------------------------------------------------------------------ start
document.addEventListener("DOMContentLoaded", () => {
  $("api-key").value = apiKey();
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY_STORAGE, $("api-key").value.trim());
    loadCollections();
  });
  $("ask-form").addEventListener("submit", ask);
  $("upload-form").addEventListener("submit", upload);
  $("collection").addEventListener("change", clearAnswer);
  loadCollections();
});
