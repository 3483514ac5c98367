"""The HA-VLN data registry: every file ``havln-robot data fetch`` writes, its public source and sha256.

Pure Python, no I/O at import. Each :class:`DataFile` maps one public URL (a raw GitHub URL of the
UWMILab/HA-VLN repository at a pinned commit) to its local name in the data layout (``ha_r2r_de/``,
``r2r/``, ``connectivity/``, ``challenge/``) and the sha256 of its bytes. The sha256 values were taken
from byte-identical copies of the public files (see docs/data.md); nothing of the data itself is
shipped with the project.

The vocabulary ``challenge/ha_r2r_instruction_vocab.json`` is pinned to a later commit of the same
repository, where it is published as ``Data/HA-R2R-tools/instruction_vocab.json``: it cannot be
derived from the other files fetched here (their instructions hold about 2,700 of its 5,077 words;
it is the word list of the full HA-R2R train/val splits). Its own ``sha256`` field fingerprints the
word list; :func:`vocab_problem` checks it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from havln_robot import jsonio

#: Public repository of the HA-VLN code release (GitHub owner/name).
SOURCE_REPO = "UWMILab/HA-VLN"
#: Commit whose files are byte-identical to the registry (all files but the vocabulary).
SOURCE_COMMIT = "103d1cebddeae9a511c6c3dab0f7bd1a22c496a9"
#: Commit that publishes the vocabulary as ``Data/HA-R2R-tools/instruction_vocab.json``.
VOCAB_COMMIT = "54a1488ed0643ef61993256ef34505869f83b2ad"
#: Raw-file URL pattern of a GitHub repository at a commit.
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"

#: Groups in fetch order, with a one-line description (``--only`` takes these names).
GROUPS: dict[str, str] = {
    "ha_r2r": "HA-R2R val_seen paths with human-aware instructions",
    "r2r": "Room-to-Room train and val_seen paths",
    "connectivity": "Matterport3D navigation graphs, 90 scans",
    "challenge": "challenge episode manifests with baseline collision counts",
    "embeddings": "5401x50 instruction embeddings of the released CMA checkpoint",
    "vocab": "ordered HA-R2R instruction vocabulary (5,079 words)",
}

#: Expected vocabulary shape: number of words, and the two special tokens at index 0 and 1.
VOCAB_WORDS = 5079
VOCAB_SPECIAL = ("<pad>", "<unk>")

# group  local name  path in SOURCE_REPO  sha256  size (bytes)
_TABLE = """
ha_r2r ha_r2r_de/HA_val_seen.json HASimulator/HA-DE/tasks/HA/data/HA_val_seen.json eb905cbbe0d1b06a6e925ad6163e0975ad41a04625ba3f9058230578fc3d2985 809221
r2r r2r/R2R_train.json HASimulator/HA-DE/tasks/R2R/data/R2R_train.json 30af70d96ea217778ba0d1b3085a774a13f36266fef39a13dbe8b03516fbf988 3996671
r2r r2r/R2R_val_seen.json HASimulator/HA-DE/tasks/R2R/data/R2R_val_seen.json 755633db9d5e64d5ca71d329c5046bb722781a09f0d1d501d7e8d094c83652ec 292756
connectivity connectivity/17DRP5sb8fy_connectivity.json HASimulator/HA-DE/connectivity/17DRP5sb8fy_connectivity.json 3a418cd67154c5c29f13c4b666eb4b099f57cf2a3217c0629344551d54656022 39217
connectivity connectivity/1LXtFkjw3qL_connectivity.json HASimulator/HA-DE/connectivity/1LXtFkjw3qL_connectivity.json 5f6f920a8406be3944d327900c7f33bfd603f20b2a668ae55192f9e97a6f4b66 237620
connectivity connectivity/1pXnuDYAj8r_connectivity.json HASimulator/HA-DE/connectivity/1pXnuDYAj8r_connectivity.json f7c9345a17ff416ff22815d9a1b3c59a946e49f4989edd7ecf1c44cabc6730cf 131496
connectivity connectivity/29hnd4uzFmX_connectivity.json HASimulator/HA-DE/connectivity/29hnd4uzFmX_connectivity.json dc3c49bf48cb4fd4a40561c24608fc799bbfca1f44a39da83f632a1ab9c48197 277009
connectivity connectivity/2azQ1b91cZZ_connectivity.json HASimulator/HA-DE/connectivity/2azQ1b91cZZ_connectivity.json 76a3bc8ac818117334a8a31b6adad5ab65947bda27f755bdc478690b171499b8 605095
connectivity connectivity/2n8kARJN3HM_connectivity.json HASimulator/HA-DE/connectivity/2n8kARJN3HM_connectivity.json 356ecab3fe8ec66a97bf57eb2bdbc44a892e063e108e3dec083c5bc973a12559 458566
connectivity connectivity/2t7WUuJeko7_connectivity.json HASimulator/HA-DE/connectivity/2t7WUuJeko7_connectivity.json 826a487ec51c78988ab1594a18c559499217a44bbc219586af31e17f69b4553e 25390
connectivity connectivity/5LpN3gDmAk7_connectivity.json HASimulator/HA-DE/connectivity/5LpN3gDmAk7_connectivity.json 2b24541c87a08fdb98d1cd7665cf803a4be7bec146d3339d47b093d58f0152e4 267420
connectivity connectivity/5ZKStnWn8Zo_connectivity.json HASimulator/HA-DE/connectivity/5ZKStnWn8Zo_connectivity.json d69b3ce20ea89a6bc1fe17f09f8c015068becddaacf07e8c4f5b958a9f9d8394 387178
connectivity connectivity/5q7pvUzZiYa_connectivity.json HASimulator/HA-DE/connectivity/5q7pvUzZiYa_connectivity.json cf54f94f79b2e9e21b9dc7da56b9cbe17bbfae6bf53ddc5b30dc8dfa9b687c09 116446
connectivity connectivity/759xd9YjKW5_connectivity.json HASimulator/HA-DE/connectivity/759xd9YjKW5_connectivity.json 536c637941aca68e2084c8fa2118860340c4d074f2e3fc1eadf8a551da32de53 59594
connectivity connectivity/7y3sRwLe3Va_connectivity.json HASimulator/HA-DE/connectivity/7y3sRwLe3Va_connectivity.json d24f3942075fe72fc081fc439e305fd765a235005247981db6aebf0eec9641fe 183522
connectivity connectivity/8194nk5LbLH_connectivity.json HASimulator/HA-DE/connectivity/8194nk5LbLH_connectivity.json a296581317baf7ef135424ce3fa181ef722f0568d1acaa4a1be41a0ab9028e29 9727
connectivity connectivity/82sE5b5pLXE_connectivity.json HASimulator/HA-DE/connectivity/82sE5b5pLXE_connectivity.json 3824204bb9439cc110e8e81bf424e741539a00fc0890de78b2ba11036163848f 257189
connectivity connectivity/8WUmhLawc2A_connectivity.json HASimulator/HA-DE/connectivity/8WUmhLawc2A_connectivity.json 4f41c327d879b4eeb436702b68c9483313d9a39cc6c09fe75276d07c04775a30 131337
connectivity connectivity/ARNzJeq3xxb_connectivity.json HASimulator/HA-DE/connectivity/ARNzJeq3xxb_connectivity.json 8ead012efbcaf7ba4d49dfb5dc90adad70a449caa37454c79964f4af3fd7bd1a 137959
connectivity connectivity/B6ByNegPMKs_connectivity.json HASimulator/HA-DE/connectivity/B6ByNegPMKs_connectivity.json 49d2316a4d234842dd1ad210d48e6a2aa092f0e52d6677cfc9104187f316c9d9 1544459
connectivity connectivity/D7G3Y4RVNrH_connectivity.json HASimulator/HA-DE/connectivity/D7G3Y4RVNrH_connectivity.json d1922d48fc90a00607aebc2dff518c1ed94079a2a79862fa2d21b3842644a9d1 40606
connectivity connectivity/D7N2EKCX4Sj_connectivity.json HASimulator/HA-DE/connectivity/D7N2EKCX4Sj_connectivity.json 8acc56b8f977f311eab7a440e7f00f345782678615efc2099c84fbef93aad9fc 918175
connectivity connectivity/E9uDoFAP3SH_connectivity.json HASimulator/HA-DE/connectivity/E9uDoFAP3SH_connectivity.json 146f9722fccc69d968920437c204436135d9ec76e462a25e693397ed8a3c2fba 615881
connectivity connectivity/EDJbREhghzL_connectivity.json HASimulator/HA-DE/connectivity/EDJbREhghzL_connectivity.json 786e3d0935a8c99d7210abf03ff73893ca14f9686e98e73b583e655fddc6afe2 77811
connectivity connectivity/EU6Fwq7SyZv_connectivity.json HASimulator/HA-DE/connectivity/EU6Fwq7SyZv_connectivity.json 24783fe20e9cad1785097f7c079928df4fa13f62fe57c9f03539b66461fe723b 91603
connectivity connectivity/GdvgFV5R1Z5_connectivity.json HASimulator/HA-DE/connectivity/GdvgFV5R1Z5_connectivity.json 85377027c7ed3de5f3a48ff2f27746ad838cef78e35433fe969150f5168a8985 4716
connectivity connectivity/HxpKQynjfin_connectivity.json HASimulator/HA-DE/connectivity/HxpKQynjfin_connectivity.json 17d6f634a3b495ace01c41fa84391b8c8a22a5d62b58d1c364cb23b22adeb1b2 33471
connectivity connectivity/JF19kD82Mey_connectivity.json HASimulator/HA-DE/connectivity/JF19kD82Mey_connectivity.json b1bff5c02c38b92f9d65166125015e864055e917bc5ec82ecd329e5fc39ee48d 41847
connectivity connectivity/JeFG25nYj2p_connectivity.json HASimulator/HA-DE/connectivity/JeFG25nYj2p_connectivity.json 03ca7058be35acf06c0547855b33a3fec982f383e8c261b8b0851b56ddb3431f 123396
connectivity connectivity/JmbYfDe2QKZ_connectivity.json HASimulator/HA-DE/connectivity/JmbYfDe2QKZ_connectivity.json bbd21c28da7674425ae8d6de662ceef67482aae561d29bf579ac0d7c91be5cf2 98063
connectivity connectivity/PX4nDJXEHrG_connectivity.json HASimulator/HA-DE/connectivity/PX4nDJXEHrG_connectivity.json 5c12c9453f7fe456ad84b1000a0b1b471013b0aee9669dcca243d008f3467c6c 1150793
connectivity connectivity/Pm6F8kyY3z2_connectivity.json HASimulator/HA-DE/connectivity/Pm6F8kyY3z2_connectivity.json 2164a84663ffb0640582613787ab3a12b7e17fa275db4d02fe8e7405416086d1 21948
connectivity connectivity/PuKPg4mmafe_connectivity.json HASimulator/HA-DE/connectivity/PuKPg4mmafe_connectivity.json 5d80e1975787b91d2af3b2bd5bed70059bfa65e18dd8af273f197d15461bf13b 133182
connectivity connectivity/QUCTc6BB5sX_connectivity.json HASimulator/HA-DE/connectivity/QUCTc6BB5sX_connectivity.json 9a981fe276f158d4df3cf9cb11a88eaba14af152608c50d8b1decdd5b0234c07 287459
connectivity connectivity/RPmz2sHmrrY_connectivity.json HASimulator/HA-DE/connectivity/RPmz2sHmrrY_connectivity.json f43949bc86d3a1874e5e151cb5c2da978a2b737067011804def4febfb26375f9 55934
connectivity connectivity/S9hNv5qa7GM_connectivity.json HASimulator/HA-DE/connectivity/S9hNv5qa7GM_connectivity.json 04554b82c7083c22563f5ba2502bd57a46b2baabdad1e4d835711550a7e3096a 171640
connectivity connectivity/SN83YJsR3w2_connectivity.json HASimulator/HA-DE/connectivity/SN83YJsR3w2_connectivity.json c8399c9c399e6d1e900e23664dd01d91d1a71c7cc277b53d3ffb8ec1f3611090 912542
connectivity connectivity/TbHJrupSAjP_connectivity.json HASimulator/HA-DE/connectivity/TbHJrupSAjP_connectivity.json a78bdbec967ee368644a940f79fdaeb4a2922e11a477fd08471990a83eaf23f3 189628
connectivity connectivity/ULsKaCPVFJR_connectivity.json HASimulator/HA-DE/connectivity/ULsKaCPVFJR_connectivity.json 565533c1617620fbcc6b7585beb90c4807fb779cd47f87f2360c7970bd89d361 146717
connectivity connectivity/UwV83HsGsw3_connectivity.json HASimulator/HA-DE/connectivity/UwV83HsGsw3_connectivity.json a33ec3b7e973ba98cc527b2e52bcce820b0340a8727d193dee7f7a5b8aace743 217322
connectivity connectivity/Uxmj2M2itWa_connectivity.json HASimulator/HA-DE/connectivity/Uxmj2M2itWa_connectivity.json 60e3d96ff53abf2e02617c08f487122ad1de7dfcfe411162b130493e4b7b3ed9 270525
connectivity connectivity/V2XKFyX4ASd_connectivity.json HASimulator/HA-DE/connectivity/V2XKFyX4ASd_connectivity.json 16d0e0af6521423e2eddb05805ba3bba7b569cb99b099a96493191e145df2ed9 333869
connectivity connectivity/VFuaQ6m2Qom_connectivity.json HASimulator/HA-DE/connectivity/VFuaQ6m2Qom_connectivity.json afa8637b047cf53137b22ffffddd67caac9f279f2c3d5f12de81772e463edf6e 392037
connectivity connectivity/VLzqgDo317F_connectivity.json HASimulator/HA-DE/connectivity/VLzqgDo317F_connectivity.json e9201eac9463c8889667079f0a61febab3a69f3d06bc545c5a9eb0e3b7db214e 220403
connectivity connectivity/VVfe2KiqLaN_connectivity.json HASimulator/HA-DE/connectivity/VVfe2KiqLaN_connectivity.json a2a04a0f20261e3502c5e97216e8750b64ce2cca6bf8052dc7fef9703f653a66 58940
connectivity connectivity/Vt2qJdWjCF2_connectivity.json HASimulator/HA-DE/connectivity/Vt2qJdWjCF2_connectivity.json 621a2ea44788992a6ab7a33f435de64cc9ecbfa9cdd91f92c26fdbac4f1d3f43 138958
connectivity connectivity/Vvot9Ly1tCj_connectivity.json HASimulator/HA-DE/connectivity/Vvot9Ly1tCj_connectivity.json 21a9c430e474355a113a421f72fb2d518fae2c3f4f96e770cb3f6589b143f780 281563
connectivity connectivity/VzqfbhrpDEA_connectivity.json HASimulator/HA-DE/connectivity/VzqfbhrpDEA_connectivity.json 6b5c2dca3b87098c22321955b8c004982eee15a1257923fc5bf5e004cd89c608 1086413
connectivity connectivity/WYY7iVyf5p8_connectivity.json HASimulator/HA-DE/connectivity/WYY7iVyf5p8_connectivity.json 76d7bd77e6a087762fdf747257b18b39730e0b45f81c4a15b93847ed37a168a8 92070
connectivity connectivity/X7HyMhZNoso_connectivity.json HASimulator/HA-DE/connectivity/X7HyMhZNoso_connectivity.json b1c40a2686badb0eec29e1f2c1406714a385e7563f3f1abe20e610a548e1cb2a 105082
connectivity connectivity/XcA2TqTSSAj_connectivity.json HASimulator/HA-DE/connectivity/XcA2TqTSSAj_connectivity.json da5917f7440e48e6a2d2d24773ab833c14c36e1cf39533906f0f79dd3aeab06a 168285
connectivity connectivity/YFuZgdQ5vWj_connectivity.json HASimulator/HA-DE/connectivity/YFuZgdQ5vWj_connectivity.json b499c15684e5ccab7906c7a5c58c08712c9fe1ab9636ef4bbb555c41effedc00 116519
connectivity connectivity/YVUC4YcDtcY_connectivity.json HASimulator/HA-DE/connectivity/YVUC4YcDtcY_connectivity.json e5a2558851816eab9d2d45549402ffdc14614593aaabe26f4aad7a057530b0b9 36393
connectivity connectivity/YmJkqBEsHnH_connectivity.json HASimulator/HA-DE/connectivity/YmJkqBEsHnH_connectivity.json 326a11bb6c716897c04a55e038c067d3b4969f446c82b515441640a2afe9cb43 4141
connectivity connectivity/Z6MFQCViBuw_connectivity.json HASimulator/HA-DE/connectivity/Z6MFQCViBuw_connectivity.json 2c0646677c1042939ee32bf725e98b101334bcd381ac8354277c3c98231e691c 54329
connectivity connectivity/ZMojNkEp431_connectivity.json HASimulator/HA-DE/connectivity/ZMojNkEp431_connectivity.json e9208f6ed9bb4d0d57578083b06a8df1c4c9aa1957a01b5dc58fcfc923f00646 88809
connectivity connectivity/aayBHfsNo7d_connectivity.json HASimulator/HA-DE/connectivity/aayBHfsNo7d_connectivity.json 57a108e8c2e9262fb6f3fe846a2c535d7166fcd1c466df71add2a58a0955b877 76979
connectivity connectivity/ac26ZMwG7aT_connectivity.json HASimulator/HA-DE/connectivity/ac26ZMwG7aT_connectivity.json f4c81bdba32c0f87804c173cf748799cb74be1fbb963cbaa252770db8790207a 392378
connectivity connectivity/b8cTxDM8gDG_connectivity.json HASimulator/HA-DE/connectivity/b8cTxDM8gDG_connectivity.json b9c962eb82d8ceae153f322747c0b807467a7b2e947d63a902e1efdc0a1f5143 192212
connectivity connectivity/cV4RVeZvu5T_connectivity.json HASimulator/HA-DE/connectivity/cV4RVeZvu5T_connectivity.json 66de3ebf90f7ad3f3f1c2e490452d10233e1fafbbf2c914db871da4aea1e81a4 121324
connectivity connectivity/dhjEzFoUFzH_connectivity.json HASimulator/HA-DE/connectivity/dhjEzFoUFzH_connectivity.json db4241a7c0fc3b7ca44c260e64aa6e3b86c6a28e021bdc1f81d0ecfb2f6c8171 618152
connectivity connectivity/e9zR4mvMWw7_connectivity.json HASimulator/HA-DE/connectivity/e9zR4mvMWw7_connectivity.json b46dd26e1fd984ff5ac3ceeee2aa1580a69f5dc5cb0a6dbb013c60e4dbae3131 121087
connectivity connectivity/fzynW3qQPVF_connectivity.json HASimulator/HA-DE/connectivity/fzynW3qQPVF_connectivity.json 3459c760162bef6fb7616e6fc1818190bf2ed0fa771583561108a5923f965914 370524
connectivity connectivity/gTV8FGcVJC9_connectivity.json HASimulator/HA-DE/connectivity/gTV8FGcVJC9_connectivity.json d72d87587925a8fba34ce875e720657dae1d8cf27b6b8a4164def1e2a053fa60 696503
connectivity connectivity/gYvKGZ5eRqb_connectivity.json HASimulator/HA-DE/connectivity/gYvKGZ5eRqb_connectivity.json 2d3464629b3e645eba8c8f4a374f8511756398bdc2cdd3ed9232e292782e61c1 26418
connectivity connectivity/gZ6f7yhEvPG_connectivity.json HASimulator/HA-DE/connectivity/gZ6f7yhEvPG_connectivity.json df9da982d5a4041c3112b0122ef44aec93da7e10040b5cc1fe06e8675babaf70 2738
connectivity connectivity/gxdoqLR6rwA_connectivity.json HASimulator/HA-DE/connectivity/gxdoqLR6rwA_connectivity.json 6cc0e35d11dc8ebb31655cb47168b7f17e02c2267cae577599888c358d2d7c43 375624
connectivity connectivity/i5noydFURQK_connectivity.json HASimulator/HA-DE/connectivity/i5noydFURQK_connectivity.json ef3fff9b49b8f23536fde2963c63d11b5a84cf117411651d8f693d1d521f9bdf 51416
connectivity connectivity/jh4fc5c5qoQ_connectivity.json HASimulator/HA-DE/connectivity/jh4fc5c5qoQ_connectivity.json a99b37fa90173a0855c9d3962cd902be6c0d3f9109f29485460ebe1cdb877159 39266
connectivity connectivity/jtcxE69GiFV_connectivity.json HASimulator/HA-DE/connectivity/jtcxE69GiFV_connectivity.json 83642ff57afc897a97c5dfb3e9fbd317c0ef7a6b6ec4d8ca648acb1948edffe6 298737
connectivity connectivity/kEZ7cmS4wCh_connectivity.json HASimulator/HA-DE/connectivity/kEZ7cmS4wCh_connectivity.json 712fa3198658051ec014e1dd5ff82a304d7de01c43d27b1d74f6cefa7445832b 628891
connectivity connectivity/mJXqzFtmKg4_connectivity.json HASimulator/HA-DE/connectivity/mJXqzFtmKg4_connectivity.json f3b9678ca6c657a2957c390ce7b33d661438cc9f231ba8767f628fbc96bc8ac1 478183
connectivity connectivity/oLBMNvg9in8_connectivity.json HASimulator/HA-DE/connectivity/oLBMNvg9in8_connectivity.json 7037419d71cf679fcd7115802c32f4b12caea3d4aea5d2dec7e21ab898ceb09b 183949
connectivity connectivity/p5wJjkQkbXX_connectivity.json HASimulator/HA-DE/connectivity/p5wJjkQkbXX_connectivity.json b72488d93eca5a9566a371885822a95f8bea27be9e01ba6c52295d9a6302e328 325457
connectivity connectivity/pLe4wQe7qrG_connectivity.json HASimulator/HA-DE/connectivity/pLe4wQe7qrG_connectivity.json ae68e194ace32a82a14557ca8dc511df8d8e157bf0809a115f0169c4b6c05dfb 18929
connectivity connectivity/pRbA3pwrgk9_connectivity.json HASimulator/HA-DE/connectivity/pRbA3pwrgk9_connectivity.json 76a52705a25cbd615f5f986848491082722f1fde0f087d67b760b40b05106c97 217783
connectivity connectivity/pa4otMbVnkk_connectivity.json HASimulator/HA-DE/connectivity/pa4otMbVnkk_connectivity.json 5d17ee7683570f84e97fd03a55ebec72469edbceebd271e092f54b2c5c101cf2 684470
connectivity connectivity/q9vSo1VnCiC_connectivity.json HASimulator/HA-DE/connectivity/q9vSo1VnCiC_connectivity.json 33216ecbe81e427974df271340a5b536dabd933696e1ade250141e1b8bd6b454 109316
connectivity connectivity/qoiz87JEwZ2_connectivity.json HASimulator/HA-DE/connectivity/qoiz87JEwZ2_connectivity.json 47197fbf5029c69fd95ab9413caa1e9ada41fd1ddf41a18ebdaed8faa4299288 244431
connectivity connectivity/r1Q1Z4BcV1o_connectivity.json HASimulator/HA-DE/connectivity/r1Q1Z4BcV1o_connectivity.json 670a4e6a16aabfa29a28958fbc915df5c56fcd5e7a009df5137f20c47553fbd2 188727
connectivity connectivity/r47D5H71a5s_connectivity.json HASimulator/HA-DE/connectivity/r47D5H71a5s_connectivity.json f2d7d83dc4bcfd357a399f72debfe27c8a8cd47d08209e683e74f8a6245302fd 59240
connectivity connectivity/rPc6DW4iMge_connectivity.json HASimulator/HA-DE/connectivity/rPc6DW4iMge_connectivity.json a02f63f7e161c527f20f52af7fd3cd8bf07b94822d6624d8e365afa4369d5b27 198699
connectivity connectivity/rqfALeAoiTq_connectivity.json HASimulator/HA-DE/connectivity/rqfALeAoiTq_connectivity.json bd38d6d976d1a146ba3231d22cb124d2446b8e1ccd0908bf2c23385bc0ddbce2 149468
connectivity connectivity/s8pcmisQ38h_connectivity.json HASimulator/HA-DE/connectivity/s8pcmisQ38h_connectivity.json c661eac63f82f1697fc22900b8781270d60cb603762c15ad0a8ac6c3a7bf6bc3 42238
connectivity connectivity/sKLMLpTHeUy_connectivity.json HASimulator/HA-DE/connectivity/sKLMLpTHeUy_connectivity.json efc71f060a552d4ad2b7bd046c9574aeb2503d5eae925ac46e2427c206e7c3ec 223640
connectivity connectivity/sT4fr6TAbpF_connectivity.json HASimulator/HA-DE/connectivity/sT4fr6TAbpF_connectivity.json b53e5eae6cde845841e74a981511f78dfa1803c8094dc1f5d20ed3911ffd1db2 98338
connectivity connectivity/uNb9QFRL6hY_connectivity.json HASimulator/HA-DE/connectivity/uNb9QFRL6hY_connectivity.json 839ceca94f222fdc72908cb7a0f16c6be68e8310829331ede7e9435f10d71ee3 638814
connectivity connectivity/ur6pFq6Qu1A_connectivity.json HASimulator/HA-DE/connectivity/ur6pFq6Qu1A_connectivity.json 63c66c2efbcfac5bdee18b3f3e7d8996775d49732dffd482a7f04733e2c4a7eb 205073
connectivity connectivity/vyrNrziPKCB_connectivity.json HASimulator/HA-DE/connectivity/vyrNrziPKCB_connectivity.json f6ffbe3d19e2ca67db664f565318e01970fb746d889a02e96e6de28faee174b5 1482874
connectivity connectivity/wc2JMjhGNzB_connectivity.json HASimulator/HA-DE/connectivity/wc2JMjhGNzB_connectivity.json 35e5b196f7cf31b3532b296a760fd01d255326834b7af15abebee287f93176d4 413833
connectivity connectivity/x8F5xyUWy9e_connectivity.json HASimulator/HA-DE/connectivity/x8F5xyUWy9e_connectivity.json 86f9ebff3b183d6e31e3efa072b6f2d78317b0e175dc77206ded243bfbf82cd2 32587
connectivity connectivity/yqstnuAEVhm_connectivity.json HASimulator/HA-DE/connectivity/yqstnuAEVhm_connectivity.json b51739e02248dfbdaeaaf2655bda060ed9e9517e6ba9d85c72f61ab2fefc726c 141824
connectivity connectivity/zsNo4HB9uLZ_connectivity.json HASimulator/HA-DE/connectivity/zsNo4HB9uLZ_connectivity.json 2b345bff1411860f5ccbbef079f8ff327c271c8ebc10947771d1cea02699d5a2 46688
challenge challenge/collision_num_val_seen.json Data/HA-R2R-tools/collision_num_val_seen.json 632b5a47b14d9b09e2ac095b8c58cd551c421a6a37867d90efe9e7bbe3f70dc0 7672
challenge challenge/collision_num_val_unseen.json Data/HA-R2R-tools/collision_num_val_unseen.json 2c9111b1090cf06ba45f6b9b6549a127f70701fe15eb76b7dec652a849d5e6c0 19122
embeddings challenge/cma_instruction_embeddings_5401x50.json.gz Data/HA-R2R-tools/embeddings.json.gz 30e1ac6ba46a8db337bf27307d5604bdef0cb5f08fc832411bfea8025251ada2 909566
vocab challenge/ha_r2r_instruction_vocab.json Data/HA-R2R-tools/instruction_vocab.json 4154ed99878ded8b72ea047b3a286a4d33ecff37ce70b077c1205b4ba6e1403c 77275
"""


@dataclass(frozen=True)
class DataFile:
    """One file of the data layout.

    Attributes:
        group: one of :data:`GROUPS`.
        local: path under the data folder, with ``/`` separators (also its path on a mirror).
        source_path: path inside :data:`SOURCE_REPO`.
        commit: the commit of :data:`SOURCE_REPO` the URL is pinned to.
        sha256: hex sha256 of the file's bytes.
        size: file size in bytes.
    """

    group: str
    local: str
    source_path: str
    commit: str
    sha256: str
    size: int

    @property
    def url(self) -> str:
        """The public URL of this file (raw GitHub content at the pinned commit)."""
        return RAW_URL.format(repo=SOURCE_REPO, commit=self.commit, path=self.source_path)


def _parse(table: str) -> tuple[DataFile, ...]:
    out = []
    for line in table.strip().splitlines():
        group, local, source, sha, size = line.split()
        commit = VOCAB_COMMIT if group == "vocab" else SOURCE_COMMIT
        out.append(DataFile(group, local, source, commit, sha, int(size)))
    return tuple(out)


#: Every file, in fetch order.
FILES: tuple[DataFile, ...] = _parse(_TABLE)


class UnknownGroupError(ValueError):
    """A group name that is not in :data:`GROUPS`."""


def select(groups: Iterable[str] | None = None) -> list[DataFile]:
    """The registry entries of ``groups`` (all when None or empty), in fetch order.

    Raises:
        UnknownGroupError: a name not in :data:`GROUPS` (the message lists the valid ones).
    """
    wanted = [g for g in (groups or []) if g]
    bad = [g for g in wanted if g not in GROUPS]
    if bad:
        raise UnknownGroupError(f"unknown data group {bad[0]!r}; choose from {', '.join(GROUPS)}")
    return [f for f in FILES if not wanted or f.group in wanted]


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in ``chunk``-byte pieces.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def vocab_fingerprint(words: list[str]) -> str:
    """sha256 of the compact JSON (``separators=(",", ":")``) of an ordered word list."""
    return hashlib.sha256(jsonio.dumps(words, separators=(",", ":")).encode()).hexdigest()


def vocab_problem(path: str | Path) -> str | None:
    """Check a vocabulary file's structure; None when sound, else one line saying what is wrong.

    Sound: a JSON object whose ``word_list`` has :data:`VOCAB_WORDS` words starting with
    :data:`VOCAB_SPECIAL` and whose ``sha256`` field equals :func:`vocab_fingerprint` of that list.
    """
    try:
        from havln_robot.jsonio import load_json_file

        doc = load_json_file(path)
    except (OSError, ValueError) as exc:
        return f"not readable as JSON ({exc})"
    words = doc.get("word_list") if isinstance(doc, dict) else None
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        return "no word_list of strings"
    if len(words) != VOCAB_WORDS:
        return f"{len(words)} words, expected {VOCAB_WORDS}"
    if tuple(words[:2]) != VOCAB_SPECIAL:
        return f"first words are {words[:2]}, expected {list(VOCAB_SPECIAL)}"
    if doc.get("sha256") != vocab_fingerprint(words):
        return "its sha256 field does not match its word_list"
    return None
