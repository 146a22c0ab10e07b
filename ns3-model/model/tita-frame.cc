#include "tita-frame.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ns3/log.h"
#include "tita/wire/frame.h"
#include "tita/wire/headers.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TitaFrame");
NS_OBJECT_ENSURE_REGISTERED(TitaRawHeader);
NS_OBJECT_ENSURE_REGISTERED(TitaRawTrailer);

TypeId
TitaRawHeader::GetTypeId()
{
    static TypeId tid = TypeId("ns3::TitaRawHeader")
                            .SetParent<Header>()
                            .SetGroupName("Tita")
                            .AddConstructor<TitaRawHeader>();
    return tid;
}

TypeId
TitaRawHeader::GetInstanceTypeId() const
{
    return GetTypeId();
}

TitaRawHeader::TitaRawHeader(const uint8_t* data, uint32_t len)
    : m_len(std::min(len, kMaxBytes))
{
    std::memcpy(m_data, data, m_len);
}

void
TitaRawHeader::SetSize(uint32_t len)
{
    m_len = std::min(len, kMaxBytes);
}

void
TitaRawHeader::Serialize(Buffer::Iterator start) const
{
    start.Write(m_data, m_len);
}

uint32_t
TitaRawHeader::Deserialize(Buffer::Iterator start)
{
    start.Read(m_data, m_len);
    return m_len;
}

uint32_t
TitaRawHeader::Deserialize(Buffer::Iterator start, Buffer::Iterator end)
{
    m_len = std::min(end.GetDistanceFrom(start), kMaxBytes);
    start.Read(m_data, m_len);
    return m_len;
}

void
TitaRawHeader::Print(std::ostream& os) const
{
    os << "raw " << m_len << " bytes";
}

TypeId
TitaRawTrailer::GetTypeId()
{
    static TypeId tid = TypeId("ns3::TitaRawTrailer")
                            .SetParent<Trailer>()
                            .SetGroupName("Tita")
                            .AddConstructor<TitaRawTrailer>();
    return tid;
}

TypeId
TitaRawTrailer::GetInstanceTypeId() const
{
    return GetTypeId();
}

TitaRawTrailer::TitaRawTrailer(const uint8_t* data, uint32_t len)
    : m_len(std::min(len, kMaxBytes))
{
    std::memcpy(m_data, data, m_len);
}

void
TitaRawTrailer::SetSize(uint32_t len)
{
    m_len = std::min(len, kMaxBytes);
}

void
TitaRawTrailer::Serialize(Buffer::Iterator end) const
{
    end.Prev(m_len);
    end.Write(m_data, m_len);
}

uint32_t
TitaRawTrailer::Deserialize(Buffer::Iterator end)
{
    end.Prev(m_len);
    end.Read(m_data, m_len);
    return m_len;
}

void
TitaRawTrailer::Print(std::ostream& os) const
{
    os << "raw trailer " << m_len << " bytes";
}


// ---------------------------------------------------------------- TitaPacket

namespace
{

// Per thread: a parallel run's threads (tita-sim --threads) each make and free
// frames; a frame freed on another thread than the one that made it joins that
// thread's pool.
thread_local TitaPacket* g_freePackets = nullptr;

} // namespace

TitaPacket*
TitaPacket::Alloc()
{
    if (g_freePackets == nullptr)
    {
        return new TitaPacket();
    }
    TitaPacket* p = g_freePackets;
    g_freePackets = p->m_nextFree;
    p->m_nextFree = nullptr;
    return p;
}

void
TitaPacketFree::operator()(TitaPacket* p) const
{
    p->m_body.reset();
    p->m_nextFree = g_freePackets;
    g_freePackets = p;
}

TitaPacketPtr
TitaPacket::Make(const uint8_t* hdr, uint32_t hdrLen, uint32_t payloadBytes, const uint8_t* tail, uint32_t tailLen)
{
    if (hdrLen > kHeadBytes || tailLen > kTailBytes)
    {
        return nullptr;
    }
    TitaPacketPtr p(Alloc());
    p->m_headLen = static_cast<uint16_t>(hdrLen);
    p->m_payloadLen = payloadBytes;
    p->m_tailLen = static_cast<uint16_t>(tailLen);
    std::memcpy(p->m_head, hdr, hdrLen);
    if (tailLen > 0)
    {
        std::memcpy(p->m_tail, tail, tailLen);
    }
    return p;
}

TitaPacketPtr
TitaPacket::MakeControl(const uint8_t* frame, uint32_t len)
{
    const uint32_t end = ::tita::wire::datagram_end(frame, len);
    if (end > 0 && end < len && end <= kHeadBytes && len - end <= kTailBytes)
    {
        return Make(frame, end, 0, frame + end, len - end);
    }
    if (len <= kHeadBytes)
    {
        return Make(frame, len, 0, nullptr, 0);
    }
    return FromBytes(frame, len);
}

void
TitaPacket::SetBody(const uint8_t* body, uint32_t len)
{
    m_payloadLen = len;
    m_body.reset(new uint8_t[len]);
    std::memcpy(m_body.get(), body, len);
}

uint32_t
TitaPacket::CopyTo(uint8_t* buf, uint32_t cap) const
{
    const uint32_t n = GetSize();
    if (n > cap)
    {
        return 0;
    }
    std::memcpy(buf, m_head, m_headLen);
    if (m_body)
    {
        std::memcpy(buf + m_headLen, m_body.get(), m_payloadLen);
    }
    else
    {
        std::memset(buf + m_headLen, 0, m_payloadLen);
    }
    std::memcpy(buf + m_headLen + m_payloadLen, m_tail, m_tailLen);
    return n;
}

Ptr<Packet>
TitaPacket::ToPacket() const
{
    if (m_body)
    {
        std::vector<uint8_t> b(GetSize());
        CopyTo(b.data(), static_cast<uint32_t>(b.size()));
        return Create<Packet>(b.data(), static_cast<uint32_t>(b.size()));
    }
    return TitaFrame::MakeFramePacket(m_head, m_headLen, m_payloadLen, m_tail, m_tailLen);
}

uint16_t
TitaPacket::Ethertype() const
{
    ::tita::wire::EthernetView e;
    return ::tita::wire::parse_ethernet(m_head, m_headLen, &e) ? e.ethertype : 0;
}

// ---------------------------------------------------------------- TitaFrame

Ptr<Packet>
TitaFrame::MakeFramePacket(const uint8_t* hdr,
                uint32_t hdrLen,
                uint32_t zeroBytes,
                const uint8_t* tail,
                uint32_t tailLen)
{
    Ptr<Packet> p = Create<Packet>(zeroBytes);
    if (hdrLen > 0)
    {
        p->AddHeader(TitaRawHeader(hdr, hdrLen));
    }
    if (tailLen > 0)
    {
        p->AddTrailer(TitaRawTrailer(tail, tailLen));
    }
    return p;
}

namespace
{

bool
AllZero(const uint8_t* p, uint32_t n)
{
    uint64_t acc = 0;
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8)
    {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        acc |= w;
    }
    for (; i < n; ++i)
    {
        acc |= p[i];
    }
    return acc == 0;
}

} // namespace

TitaPacketPtr
TitaPacket::FromBytes(const uint8_t* frame, uint32_t len)
{
    ::tita::wire::Packet pkt;
    const auto e = ::tita::wire::parse(frame,
                                       len,
                                       &pkt,
                                       {.verify_icrc = false, .verify_ip_checksum = false});
    if (e == ::tita::wire::ParseError::kOk && pkt.payload_len > 0 && pkt.payload_offset <= kHeadBytes &&
        len - pkt.payload_offset - pkt.payload_len <= kTailBytes)
    {
        const uint32_t tailAt = pkt.payload_offset + pkt.payload_len;
        TitaPacketPtr p = Make(frame, pkt.payload_offset, pkt.payload_len, frame + tailAt, len - tailAt);
        if (!AllZero(frame + pkt.payload_offset, pkt.payload_len))
        {
            p->SetBody(frame + pkt.payload_offset, pkt.payload_len);
        }
        return p;
    }
    if (e == ::tita::wire::ParseError::kOk && pkt.payload_len == 0)
    {
        const uint32_t end = ::tita::wire::datagram_end(frame, len);
        if (end > 0 && end < len && end <= kHeadBytes && len - end <= kTailBytes)
        {
            return Make(frame, end, 0, frame + end, len - end);
        }
    }
    if (len <= kHeadBytes)
    {
        return Make(frame, len, 0, nullptr, 0);
    }
    TitaPacketPtr p = Make(frame, kHeadBytes, 0, nullptr, 0);
    p->SetBody(frame + kHeadBytes, len - kHeadBytes);
    return p;
}

Ptr<Packet>
TitaFrame::FramePacketFromBytes(const uint8_t* frame, uint32_t len)
{
    ::tita::wire::Packet pkt;
    const auto e = ::tita::wire::parse(frame,
                                       len,
                                       &pkt,
                                       {.verify_icrc = false, .verify_ip_checksum = false});
    if (e == ::tita::wire::ParseError::kOk && pkt.payload_len > 0 &&
        pkt.payload_offset <= TitaRawHeader::kMaxBytes &&
        len - pkt.payload_offset - pkt.payload_len <= TitaRawTrailer::kMaxBytes &&
        AllZero(frame + pkt.payload_offset, pkt.payload_len))
    {
        const uint32_t tailAt = pkt.payload_offset + pkt.payload_len;
        return MakeFramePacket(frame, pkt.payload_offset, pkt.payload_len, frame + tailAt, len - tailAt);
    }
    return Create<Packet>(frame, len);
}

uint32_t
TitaFrame::CopyFrame(const Ptr<const Packet>& p, uint8_t* buf, uint32_t cap)
{
    const uint32_t n = p->GetSize();
    if (n > cap)
    {
        return 0;
    }
    return p->CopyData(buf, n);
}

uint16_t
TitaFrame::PeekEthertype(const Ptr<const Packet>& p)
{
    uint8_t b[18];
    const uint32_t n = p->CopyData(b, sizeof(b));
    ::tita::wire::EthernetView e;
    return ::tita::wire::parse_ethernet(b, n, &e) ? e.ethertype : 0;
}

} // namespace ns3
