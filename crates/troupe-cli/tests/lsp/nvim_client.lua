-- Drives `troupe lsp` with Neovim's built-in LSP client (Neovim 0.7+),
-- headless. Run by crates/troupe-cli/tests/lsp_nvim.rs:
--   TROUPE_BIN=… TROUPE_EXAMPLES=… TROUPE_NVIM_LOG=… nvim --headless --clean -u NONE -c 'luafile nvim_client.lua'
-- Writes one `PASS name` or `FAIL name: detail` line per check to the log and
-- exits with status 1 when any check failed.

local troupe = assert(os.getenv('TROUPE_BIN'), 'TROUPE_BIN')
local examples = assert(os.getenv('TROUPE_EXAMPLES'), 'TROUPE_EXAMPLES')
local out = assert(io.open(assert(os.getenv('TROUPE_NVIM_LOG'), 'TROUPE_NVIM_LOG'), 'w'))
local failures = 0
local TIMEOUT = 30000 -- a hang guard, not a latency budget

local function log(line)
  out:write(line .. '\n')
  out:flush()
end

local function check(name, ok, detail)
  if ok then
    log('PASS ' .. name)
  else
    failures = failures + 1
    log('FAIL ' .. name .. ': ' .. vim.inspect(detail))
  end
end

-- 0-based line and byte column of the n-th (0-based) `needle` plus `skip`.
local function find(buf, needle, n, skip)
  local count = 0
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local from = 1
    while true do
      local a = string.find(line, needle, from, true)
      if not a then break end
      if count == n then return i - 1, a - 1 + (skip or 0) end
      count = count + 1
      from = a + 1
    end
  end
  error('not found: ' .. needle)
end

local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

local function run()
  vim.cmd('edit ' .. examples .. '/consensus.troupe')
  local buf = vim.api.nvim_get_current_buf()
  local published = 0
  local client_id = vim.lsp.start_client({
    name = 'troupe',
    cmd = { troupe, 'lsp' },
    root_dir = examples,
    handlers = {
      ['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
        published = published + 1
        return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
      end,
    },
  })
  check('start_client', client_id ~= nil, client_id)
  vim.lsp.buf_attach_client(buf, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  check('initialized', vim.wait(TIMEOUT, function() return client.initialized end), nil)
  check('first diagnostics', vim.wait(TIMEOUT, function() return published > 0 end), published)
  check('the example has no diagnostics', #vim.diagnostic.get(buf) == 0, vim.diagnostic.get(buf))

  local function at(needle, n, skip)
    local line, col = find(buf, needle, n, skip)
    vim.api.nvim_win_set_cursor(0, { line + 1, col })
    return vim.lsp.util.make_position_params(0, client.offset_encoding), line, col
  end
  local function request(method, params)
    local r = client.request_sync(method, params, TIMEOUT, buf)
    if not r then return nil, 'timeout' end
    return r.result, r.err
  end

  -- Hover: a variable's type and lifeline.
  local hover = request('textDocument/hover', at('msg Bob(b, b_reason)', 0, #'msg Bob(b, '))
  local value = hover and hover.contents and hover.contents.value or ''
  check('hover variable', value:find('b_reason: Text', 1, true) and value:find('**Bob**', 1, true), value)
  -- Hover: a lifeline's participation.
  hover = request('textDocument/hover', at('act Bob:', 0, 4))
  value = hover and hover.contents and hover.contents.value or ''
  check('hover lifeline', value:find('receives decisions of: Alice', 1, true), value)
  -- Hover: an action's signature and body.
  hover = request('textDocument/hover', at('= assess(case)', 0, 2))
  value = hover and hover.contents and hover.contents.value or ''
  check('hover action', value:find('llm assess(case: Text)', 1, true) and value:find('prompt:', 1, true), value)

  -- Definition: Bob's `case` is bound by the first message's receive.
  local def = request('textDocument/definition', at('act Bob: b, b_reason = assess(case)', 0, #'act Bob: b, b_reason = assess('))
  local want_line, want_col = find(buf, '-> Bob(case)', 0, #'-> Bob(')
  local loc = def and (def.range and def or def[1])
  check('definition', loc and loc.range.start.line == want_line and loc.range.start.character == want_col,
    { got = def, want = { want_line, want_col } })

  -- Rename through the client's own rename (prepareRename, rename, apply).
  at('act Alice: round = 1', 0, #'act Alice: ')
  vim.lsp.buf.rename('turn')
  local renamed = vim.wait(TIMEOUT, function() return buffer_text(buf):find('act Alice: turn = 1', 1, true) ~= nil end)
  local code = {}
  for _, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if not l:match('^%s*//') then table.insert(code, l) end
  end
  local code_text = table.concat(code, '\n')
  local _, turns = code_text:gsub('%f[%w_]turn%f[^%w_]', '')
  check('rename', renamed and not code_text:find('round', 1, true) and turns == 5, code_text)
  published = 0
  check('rename keeps the file clean', vim.wait(TIMEOUT, function() return published > 0 end) and #vim.diagnostic.get(buf) == 0,
    vim.diagnostic.get(buf))

  -- A read of Alice's variable at Bob: E0301, and the code action that
  -- inserts the missing message.
  local line = find(buf, 'act Bob: b, b_reason = reconsider', 0, 0)
  vim.api.nvim_buf_set_lines(buf, line + 1, line + 1, false, { '    act Bob: late = turn > 3' })
  local diag
  vim.wait(TIMEOUT, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == 'E0301' then diag = d return true end
    end
    return false
  end)
  check('diagnostic E0301', diag ~= nil and diag.lnum == line + 1 and diag.message:find('not bound at Bob', 1, true),
    vim.diagnostic.get(buf))
  if diag then
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      range = { start = { line = diag.lnum, character = diag.col }, ['end'] = { line = diag.end_lnum, character = diag.end_col } },
      context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(buf, diag.lnum) },
    }
    local actions = request('textDocument/codeAction', params) or {}
    local fix
    for _, a in ipairs(actions) do
      if a.title and a.title:find('msg Alice(turn) -> Bob(turn)', 1, true) then fix = a end
    end
    check('code action offered', fix ~= nil and fix.kind == 'quickfix', actions)
    if fix then
      vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding)
      local fixed = vim.wait(TIMEOUT, function() return #vim.diagnostic.get(buf) == 0 end)
      check('code action fixes the file', fixed and buffer_text(buf):find('    msg Alice(turn) -> Bob(turn)\n    act Bob: late', 1, true),
        { diagnostics = vim.diagnostic.get(buf), text = buffer_text(buf) })
    end
  end

  -- The projection command.
  local r = request('workspace/executeCommand', {
    command = 'troupe.project',
    arguments = { vim.uri_from_bufnr(buf), { line = find(buf, 'act Bob:', 0, 4), character = 4 } },
  })
  check('projection command', r and r.title == 'projection of Bob' and r.text:find('Bob', 1, true), r)

  vim.lsp.stop_client(client_id)
end

local ok, err = pcall(run)
check('script ran to the end', ok, err)
out:close()
if failures > 0 then
  vim.cmd('cquit 1')
else
  vim.cmd('qall!')
end
