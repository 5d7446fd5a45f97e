-- A TCP heuristic for tshark, loaded by analysis/parse/sbi_ops.py with -X lua_script: a segment
-- that begins with the HTTP/2 client connection preface (RFC 9113 3.4) makes its server port
-- HTTP/2 from there on, in the same pass. tshark 4.0 has no such heuristic of its own: its HTTP
-- heuristic turns a preface into HTTP/2 only on HTTP's port (80), so SBI on 7777 stayed TCP data
-- and needed a pre-pass to find the port first. The port goes into tshark's own port table
-- (what `-d tcp.port==P,http2` does), so later segments reach the HTTP/2 dissector without Lua.
local http2 = Dissector.get("http2")
local tcp_ports = DissectorTable.get("tcp.port")
local PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
local proto = Proto("h2preface", "HTTP/2 by its connection preface")

local function heuristic(tvb, pinfo, tree)
  if tvb:len() < #PREFACE or tvb:raw(0, #PREFACE) ~= PREFACE then
    return false
  end
  tcp_ports:add(pinfo.dst_port, http2)   -- the preface goes to the server
  http2:call(tvb, pinfo, tree)
  return true
end

proto:register_heuristic("tcp", heuristic)
