local http2 = Dissector.get("http2")
local ports = DissectorTable.get("tcp.port")
local PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
local proto = Proto("h2preface", "HTTP/2 by its connection preface")
local function heuristic(tvb, pinfo, tree)
  if tvb:len() < #PREFACE or tvb:raw(0, #PREFACE) ~= PREFACE then
    return false
  end
  ports:add(pinfo.dst_port, http2)
  http2:call(tvb, pinfo, tree)
  return true
end
proto:register_heuristic("tcp", heuristic)
