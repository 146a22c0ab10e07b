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

    /// An IEEE 802.1Qbb PFC frame from src: quanta[prio] for each priority whose bit
    /// is set in classEnable (0 quanta = resume). Padded to the Ethernet minimum.
    static Ptr<Packet> MakePfcPacket(Mac48Address src, uint8_t classEnable, const uint16_t quanta[8]);

    /// Reads a PFC frame. Returns false if p is not one.
    static bool ParsePfcPacket(const Ptr<const Packet>& p, uint8_t* classEnable, uint16_t quanta[8]);
};

} // namespace ns3
