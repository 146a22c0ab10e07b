// LossWindow (cc/include/tita/cc/loss_window.h): driven by hand-made event
// sequences, exact windows checked after each.
#include <gtest/gtest.h>

#include "tita/cc/loss_window.h"

namespace tita::cc::test {
namespace {

static_assert(sizeof(LossWindow) <= 28);

TEST(LossWindow, UnlimitedUntilTheFirstLoss) {
  LossWindow w;
  EXPECT_FALSE(w.on());
  EXPECT_TRUE(w.allows(1'000'000));
  w.on_acked(500);  // ACKs alone never switch it on
  EXPECT_FALSE(w.on());
}

TEST(LossWindow, LossHalvesTheFlightOnceAWindow) {
  LossWindow w;
  EXPECT_TRUE(w.on_loss(100));
  EXPECT_EQ(w.window(), 50u);
  EXPECT_TRUE(w.allows(49));
  EXPECT_FALSE(w.allows(50));
  EXPECT_TRUE(w.allows(0));  // one packet into an empty pipe, always
  // Losses before a window of packets was acknowledged belong to the same event.
  EXPECT_FALSE(w.on_loss(50));
  w.on_acked(49);
  EXPECT_FALSE(w.on_loss(50));
  EXPECT_EQ(w.window(), 50u);
  w.on_acked(1);  // 50 acknowledged since the cut: +1 (additive increase)
  EXPECT_EQ(w.window(), 51u);
  EXPECT_TRUE(w.on_loss(51));
  EXPECT_EQ(w.window(), 25u);
}

TEST(LossWindow, NeverBelowTwo) {
  LossWindow w;
  EXPECT_TRUE(w.on_loss(1));
  EXPECT_EQ(w.window(), 2u);
  w.on_acked(2);
  EXPECT_EQ(w.window(), 3u);
  w.on_acked(3);
  EXPECT_TRUE(w.on_loss(3));
  EXPECT_EQ(w.window(), 2u);
}

TEST(LossWindow, TimeoutRestartsFromTwoWithSlowStart) {
  LossWindow w;
  w.on_timeout(40);
  EXPECT_EQ(w.window(), 2u);
  EXPECT_EQ(w.ssthresh(), 20u);
  w.on_acked(2);  // slow start: +1 a packet
  EXPECT_EQ(w.window(), 4u);
  w.on_acked(16);
  EXPECT_EQ(w.window(), 20u);
  w.on_acked(19);  // additive increase above ssthresh
  EXPECT_EQ(w.window(), 20u);
  w.on_acked(1);
  EXPECT_EQ(w.window(), 21u);
  // A timeout always cuts, even right after another.
  w.on_timeout(21);
  w.on_timeout(2);
  EXPECT_EQ(w.window(), 2u);
  EXPECT_EQ(w.ssthresh(), 2u);
}

TEST(LossWindow, SwitchesOffAtTwiceTheLargestCut) {
  LossWindow w;
  w.on_loss(8);  // window 4, largest 4: off at 8
  EXPECT_EQ(w.window(), 4u);
  w.on_acked(4);
  EXPECT_EQ(w.window(), 5u);
  w.on_acked(5);
  w.on_acked(6);
  EXPECT_EQ(w.window(), 7u);
  EXPECT_TRUE(w.on());
  w.on_acked(7);
  EXPECT_FALSE(w.on());
  EXPECT_EQ(w.window(), LossWindow::kOff);
  // Off, a new loss starts from the flight again.
  EXPECT_TRUE(w.on_loss(30));
  EXPECT_EQ(w.window(), 15u);
}

TEST(LossWindow, AtThreePercentLossTheFlightStaysSmall) {
  // One loss every 33 packets acknowledged: the window settles where Reno's
  // does (about sqrt(8/3p), some 10 packets), far below the flight of 1000.
  LossWindow w;
  w.on_loss(1000);
  uint32_t largest_late = 0;
  for (int i = 0; i < 300; ++i) {
    w.on_acked(33);
    w.on_loss(w.on() ? w.window() : 1000);
    if (i > 200) largest_late = std::max(largest_late, w.window());
  }
  EXPECT_TRUE(w.on());
  EXPECT_LE(largest_late, 40u);
  EXPECT_GE(largest_late, 4u);
}

TEST(LossWindow, StartedItSlowStartsFromSixteenAndStaysOn) {
  LossWindow w;
  w.start();
  EXPECT_TRUE(w.on());
  EXPECT_TRUE(w.started());
  EXPECT_FALSE(w.in_episode());
  EXPECT_EQ(w.window(), LossWindow::kInitialPackets);
  EXPECT_FALSE(w.allows(16));
  w.on_acked(16);  // slow start: doubles a window
  EXPECT_EQ(w.window(), 32u);
  w.on_acked(1'000'000);
  EXPECT_EQ(w.window(), 1'000'032u);
  w.on_acked(LossWindow::kMaxPackets);
  w.on_acked(LossWindow::kMaxPackets);
  EXPECT_EQ(w.window(), LossWindow::kMaxPackets);  // no further, never off
  EXPECT_TRUE(w.on());
}

TEST(LossWindow, StartedItStaysOnAfterTheEpisode) {
  LossWindow w;
  w.start();
  w.on_acked(16);  // 32
  EXPECT_TRUE(w.on_loss(32));
  EXPECT_EQ(w.window(), 16u);
  EXPECT_TRUE(w.in_episode());
  // Additive increase back to twice the cut (32): the episode is over, the
  // window stays on and keeps growing by one a window.
  for (uint32_t k = 16; k < 32; ++k) w.on_acked(k);
  EXPECT_EQ(w.window(), 32u);
  EXPECT_FALSE(w.in_episode());
  EXPECT_TRUE(w.on());
  w.on_acked(32);
  EXPECT_EQ(w.window(), 33u);
  // The next loss is a new episode, cut from the window.
  EXPECT_TRUE(w.on_loss(33));
  EXPECT_EQ(w.window(), 16u);
  EXPECT_TRUE(w.in_episode());
}

TEST(LossWindow, StartingAWindowALossSwitchedOnKeepsIt) {
  LossWindow w;
  w.on_loss(40);  // window 20, in an episode
  w.start();
  EXPECT_EQ(w.window(), 20u);
  EXPECT_TRUE(w.started());
  for (uint32_t k = 20; k < 40; ++k) w.on_acked(k);
  EXPECT_TRUE(w.on());  // the episode is over, the window stays
  EXPECT_FALSE(w.in_episode());
}

TEST(LossWindow, AStartedWindowGoesOffWhenThePeerTurnsOutToBeTita) {
  LossWindow w;
  w.start();
  w.peer_is_tita();  // no loss yet: off at once
  EXPECT_FALSE(w.on());
  EXPECT_FALSE(w.started());
  LossWindow v;
  v.start();
  v.on_loss(16);  // window 8, in an episode: off when it ends, as if a loss had switched it on
  v.peer_is_tita();
  EXPECT_TRUE(v.on());
  for (uint32_t k = 8; k < 16; ++k) v.on_acked(k);
  EXPECT_FALSE(v.on());
}

}  // namespace
}  // namespace tita::cc::test
