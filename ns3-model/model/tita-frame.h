// Frames as ns-3 packets: real header and tail bytes around virtual payload.
//
// A RoCEv2 frame from tita's engine is headers (Ethernet through extension
// headers), payload, and a tail (pad, ICRC and the telemetry trailer). In the
// model the headers and the tail are real bytes (TitaRawHeader, TitaRawTrailer)
// and the payload is the Packet's zero-filled virtual area, so a queued 1 KB
// packet costs a few hundred bytes of memory while pcap files still hold the
// exact frame (payload as zeros, which is what phantom memory regions send).
#pragma once

#include <cstdint>
#include <memory>

#include "ns3/header.h"
#include "ns3/mac48-address.h"
#include "ns3/packet.h"
#include "ns3/trailer.h"

namespace ns3
{

/**
 * \ingroup tita
 * Bytes carried verbatim at the front of a packet.
 */
class TitaRawHeader : public Header
{
  public:
    static constexpr uint32_t kMaxBytes = 256;

    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;

    TitaRawHeader() = default;
    /// Copies len bytes (at most kMaxBytes).
    TitaRawHeader(const uint8_t* data, uint32_t len);

    /// For PeekHeader/RemoveHeader(h, size): the length to read.
    void SetSize(uint32_t len);
    const uint8_t* Data() const { return m_data; }
    uint8_t* MutableData() { return m_data; }

    uint32_t GetSerializedSize() const override { return m_len; }
    void Serialize(Buffer::Iterator start) const override;
    uint32_t Deserialize(Buffer::Iterator start) override;
    uint32_t Deserialize(Buffer::Iterator start, Buffer::Iterator end) override;
    void Print(std::ostream& os) const override;

  private:
    uint32_t m_len = 0;
    uint8_t m_data[kMaxBytes];
};

/**
 * \ingroup tita
 * Bytes carried verbatim at the end of a packet (pad, ICRC, telemetry trailer).
 * The length must be known before it is read back: SetSize().
 */
class TitaRawTrailer : public Trailer
{
  public:
    static constexpr uint32_t kMaxBytes = 256;

    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;

    TitaRawTrailer() = default;
    TitaRawTrailer(const uint8_t* data, uint32_t len);

    void SetSize(uint32_t len);
    const uint8_t* Data() const { return m_data; }

    uint32_t GetSerializedSize() const override { return m_len; }
    void Serialize(Buffer::Iterator end) const override;
    uint32_t Deserialize(Buffer::Iterator end) override;
    void Print(std::ostream& os) const override;

  private:
    uint32_t m_len = 0;
    uint8_t m_data[kMaxBytes];
};

class TitaPacket;

/// Owner of a TitaPacket: frames move from queue to wire to queue, never shared.
struct TitaPacketFree
{
    void operator()(TitaPacket* p) const;
};
using TitaPacketPtr = std::unique_ptr<TitaPacket, TitaPacketFree>;

/**
 * \ingroup tita
 * A frame in flight inside the model: its real bytes before the payload (head:
 * Ethernet through the transport headers, or the whole frame when it has no
 * payload), the payload as virtual zeros (or, rarely, real bytes), and the real
 * bytes after it (tail: pad, ICRC, telemetry trailer). Fixed-size, pooled: making,
 * editing and freeing one allocates nothing once the pool is warm, and nothing is
 * serialised until a trace asks for an ns3::Packet (ToPacket()).
 */
class alignas(64) TitaPacket
{
  public:
    /// Real bytes before the payload: Ethernet through the transport headers
    /// (98 B at most), or a whole short frame.
    static constexpr uint32_t kHeadBytes = 128;
    /// Real bytes after the payload (or after the IP datagram of a frame without
    /// one): pad, ICRC and a full telemetry trailer, plus room for one more INT
    /// record.
    static constexpr uint32_t kTailBytes = 120;

    /// hdrLen real bytes, payloadBytes virtual zeros, tailLen real bytes; nullptr
    /// if head or tail are too long.
    static TitaPacketPtr Make(const uint8_t* hdr,
                              uint32_t hdrLen,
                              uint32_t payloadBytes,
                              const uint8_t* tail,
                              uint32_t tailLen);
    /// A frame without payload (ACK, NAK, CNP): the bytes after the IP datagram
    /// (the telemetry trailer) go to the tail.
    static TitaPacketPtr MakeControl(const uint8_t* frame, uint32_t len);
    /// The frame in `frame`: RoCEv2 frames keep an all-zero payload virtual; any
    /// other bytes are kept as they are.
    static TitaPacketPtr FromBytes(const uint8_t* frame, uint32_t len);
    /// Also sets the real payload bytes (copied), for frames from real memory.
    void SetBody(const uint8_t* body, uint32_t len);

    uint32_t GetSize() const { return m_headLen + m_payloadLen + m_tailLen; }
    uint32_t HeadLen() const { return m_headLen; }
    uint32_t PayloadLen() const { return m_payloadLen; }
    uint32_t TailLen() const { return m_tailLen; }
    uint8_t* Head() { return m_head; }
    const uint8_t* Head() const { return m_head; }
    uint8_t* Tail() { return m_tail; }
    const uint8_t* Tail() const { return m_tail; }
    /// Real payload bytes, nullptr when virtual zeros.
    const uint8_t* Body() const { return m_body.get(); }
    void GrowHead(uint32_t n) { m_headLen += n; }
    void GrowTail(uint32_t n) { m_tailLen += n; }

    /// Copies the whole frame into buf (cap bytes); returns its length, 0 if it does not fit.
    uint32_t CopyTo(uint8_t* buf, uint32_t cap) const;
    /// The frame as an ns3::Packet (real head and tail, virtual zero payload), for traces and pcap.
    Ptr<Packet> ToPacket() const;
    /// Ethertype (after an 802.1Q tag if present); 0 if too short.
    uint16_t Ethertype() const;

  private:
    friend struct TitaPacketFree;
    static TitaPacket* Alloc();

    // Laid out for the switch's reads: lengths and headers in the first two
    // cache lines, the telemetry trailer in the next two.
    uint32_t m_payloadLen = 0;
    uint16_t m_headLen = 0;
    uint16_t m_tailLen = 0;
    uint8_t m_head[kHeadBytes];
    uint8_t m_tail[kTailBytes];
    std::unique_ptr<uint8_t[]> m_body;
    TitaPacket* m_nextFree = nullptr;
};

/**
 * \ingroup tita
 * Frames as packets: building, flattening, PFC frames.
 */
class TitaFrame
{
  public:
    /// Ethernet preamble + start delimiter (8), FCS (4) and inter-frame gap (12):
    /// what a frame occupies on the wire beyond its bytes (the engine paces with the same).
    static constexpr uint32_t kWireOverheadBytes = 24;
    /// Shortest Ethernet frame without FCS.
    static constexpr uint32_t kMinFrameBytes = 60;
    /// Longest frame the model handles (jumbo).
    static constexpr uint32_t kMaxFrameBytes = 9216;

    /// A packet of hdrLen real bytes, zeroBytes virtual zero bytes, then tailLen real bytes.
    static Ptr<Packet> MakeFramePacket(const uint8_t* hdr,
                                       uint32_t hdrLen,
                                       uint32_t zeroBytes,
                                       const uint8_t* tail,
                                       uint32_t tailLen);

    /// A packet from a whole frame in one buffer. RoCEv2 frames keep headers and
    /// tail as real bytes and their payload as virtual bytes when it is all zeros
    /// (phantom memory); anything else is copied as it is.
    static Ptr<Packet> FramePacketFromBytes(const uint8_t* frame, uint32_t len);

    /// Copies the whole frame into buf (cap bytes); returns its length, 0 if it does not fit.
    static uint32_t CopyFrame(const Ptr<const Packet>& p, uint8_t* buf, uint32_t cap);

    /// Ethertype of the frame (after an 802.1Q tag if present); 0 if too short.
    static uint16_t PeekEthertype(const Ptr<const Packet>& p);
};

} // namespace ns3
