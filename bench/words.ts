/**
 * Word lists for the generated catalog and playlist names. A few entries carry accents, apostrophes or emoji so
 * that the search documents go through the same normalisation as real data does.
 */

/** Comma-separated words, so that the lists stay compact (several entries contain spaces). */
const list = (text: string): readonly string[] =>
  text
    .split(',')
    .map((word) => word.trim())
    .filter((word) => word !== '');

export const GENRES = list(`Rock, Pop, Jazz, Blues, Hip-Hop, Electronic, House, Techno, Ambient, Classical, Folk,
  Country, Reggae, Soul, Funk, R&B, Metal, Punk, Indie, Latin, Bossa Nova, Afrobeat, K-Pop, Disco, Gospel, Trip-Hop,
  Drum and Bass, Chanson, Flamenco, Lo-Fi`);

export const ADJECTIVES = list(`Blue, Golden, Silent, Electric, Broken, Wild, Lonely, Bright, Dark, Endless, Hidden,
  Velvet, Crystal, Burning, Frozen, Gentle, Restless, Secret, Sweet, Bitter, Neon, Silver, Crimson, Faded, Lucky,
  Midnight, Distant, Hollow, Sacred, Stolen, Tender, Paper, Glass, Iron, Honey, Summer, Winter, Autumn, Spring,
  Northern, Southern, Western, Eastern, Little, Big, Quiet, Loud, Slow, Fast, Lazy, Happy, Sad, Strange, Perfect,
  Easy, Heavy, Soft, Cold, Warm, Young, Old, New, Last, First, Lost, Found, Empty, Open, Rolling, Falling, Rising,
  Drifting, Shining, Dancing, Wandering, Sleepy, Dreamy, Cosmic, Urban, Rusty, Salty, Sunny, Rainy, Stormy, Misty,
  Dusty, Savage, Fragile, Brave, Gilded, Violet, Scarlet, Emerald, Amber, Ivory, Jade, Copper, Marble, Naïve, Dorée,
  Über, Jolie, Grand, Petite, Eternal, Infinite, Wicked, Holy, Lovely, Hungry, Restful, Dizzy, Fuzzy, Mellow, Groovy`);

export const NOUNS = list(`Heart, River, Night, Fire, Rain, Road, Dream, Light, Shadow, Sky, Ocean, Moon, Sun, Star,
  City, Train, Window, Mirror, Garden, Highway, Desert, Mountain, Valley, Storm, Thunder, Echo, Ghost, Angel, Devil,
  Queen, King, Stranger, Lover, Friend, Child, Soldier, Sailor, Dancer, Singer, Poet, Rose, Lily, Orchid, Tiger, Wolf,
  Fox, Raven, Dove, Horse, Butterfly, Diamond, Pearl, Bullet, Candle, Letter, Promise, Secret, Memory, Kiss, Tear,
  Smile, Whisper, Song, Melody, Rhythm, Beat, Groove, Wave, Tide, Shore, Harbor, Island, Bridge, Tower, Castle, Palace,
  Street, Avenue, Alley, Corner, Station, Airport, Motel, Kitchen, Bedroom, Radio, Telephone, Guitar, Piano, Drum,
  Trumpet, Violin, Engine, Machine, Rocket, Planet, Galaxy, Comet, Horizon, Sunrise, Sunset, Twilight, Morning,
  Evening, Weekend, Holiday, Season, Carnival, Circus, Parade, Festival, Party, Dance, Waltz, Tango, Ballad, Anthem,
  Lullaby, Serenade, Hymn, Prayer, Miracle, Wonder, Mystery, Story, Chapter, Page, Book, Picture, Photograph,
  Postcard, Souvenir, Café, Fiesta, Señorita, Amigo, Corazón, Noël, Château, Boulevard, Plaza, Canyon, Prairie, Forest,
  Meadow, Orchard, Vineyard, Lighthouse, Satellite, Signal, Frequency, Circuit, Pixel, Voltage, Static, Velocity,
  Gravity, Paradise, Heaven, Eden, Jungle, Safari, Glacier, Volcano, Tornado, Hurricane, Blizzard, Monsoon, Lagoon,
  Reef, Coral, Dolphin, Whale, Shark, Lion, Panther, Cobra, Eagle, Falcon, Sparrow, Nightingale, Cricket, Firefly,
  Honeybee, Cherry, Lemon, Peach, Mango, Coconut, Cinnamon, Vanilla, Sugar, Whiskey, Champagne, Coffee, Tea, Jalapeño`);

export const VERBS = list(`Running, Dancing, Falling, Flying, Dreaming, Waiting, Walking, Driving, Burning, Shining,
  Breaking, Holding, Chasing, Crying, Laughing, Singing, Calling, Leaving, Coming, Going, Fading, Rising, Sinking,
  Floating, Spinning, Turning, Losing, Finding, Hiding, Searching, Praying, Wishing, Touching, Feeling, Missing,
  Loving, Saving, Stealing, Giving`);

export const PREPOSITIONS = list(`in, on, under, over, through, across, beyond, into, from, with`);

export const FIRST_NAMES = list(`Ana, Ben, Clara, David, Elena, Felix, Grace, Hugo, Iris, Jonas, Kira, Leo, Maya,
  Nico, Olivia, Pablo, Quinn, Rosa, Sam, Tara, Uma, Victor, Wanda, Xavier, Yara, Zoe, Amelia, Bruno, Chloé, Diego,
  Emma, Frank, Gina, Henry, Ines, Jack, Karen, Luis, Marta, Noah, Oscar, Paula, Rafael, Sofia, Tom, Ursula, Vera,
  Walter, Yusuf, Zara, Aisha, Björn, Camille, Dmitri, Esther, Fatima, Gustav, Hana, Igor, Jules, Kenji, Lena, Miguel,
  Nadia, Otto, Priya, René, Sven, Theo, Ulla, Valentina, Wei, Ximena, Yosef, Zoltán, Aaron, Bianca, Carlos, Daphne,
  Elijah, Flora, George, Hazel, Isaac, Julia, Kofi, Lucia, Marcus`);

export const LAST_NAMES = list(`Smith, Garcia, Müller, Rossi, Dubois, Kowalski, Johansson, Silva, Nakamura, Kim, Chen,
  Singh, Okafor, Haddad, Novak, Petrov, Jensen, Fischer, Moreau, Romano, Santos, Costa, Hernández, López, Martín,
  Brown, Taylor, Wilson, Davies, Evans, Thomas, Walker, Wright, Green, Hall, Wood, Clarke, Hughes, Edwards, Turner,
  Parker, Cooper, Mitchell, Bell, Murphy, O'Brien, Kelly, Ryan, Byrne, Walsh, Larsen, Nielsen, Berg, Lindqvist,
  Virtanen, Horváth, Nagy, Dvořák, Popescu, Ivanova, Yilmaz, Demir, Cohen, Levi, Mendes, Ferreira, Alves, Tanaka,
  Watanabe, Park, Lee, Nguyen, Tran, Wang, Liu, Zhang, Patel, Sharma, Mensah, Diallo, Traoré, Abebe, Mwangi, Kariuki,
  Adeyemi, Reyes, Cruz, Flores, Vargas`);

/** Moods, moments and activities, for playlist names. */
export const MOMENTS = list(`Workout, Road Trip, Study, Focus, Sleep, Morning Coffee, Sunday, Friday Night,
  Dinner Party, Rainy Day, Beach, Commute, Running, Yoga, Cooking, Cleaning, Late Night, Sunrise, Chill, Party,
  Wedding, Birthday, Gym, Reading, Coding, Gaming, Summer, Winter, Christmas, Breakup, Heartbreak, Throwback, Karaoke,
  Barbecue, Camping, Flight, Meditation, Brunch, Afterparty`);

export const PLAYLIST_SUFFIXES = list(`Mix, Vibes, Favorites, Classics, Essentials, Hits, Jams, Tunes, Selection,
  Sessions, Playlist, Grooves, Anthems, Deep Cuts, Gems, Rotation, Picks, Collection, Soundtrack, Mixtape`);

export const EMOJI = list(`🔥, 🎧, ☀️, 🌙, 💃, 🚗, ☕, 🎉, ❤️, 🌊`);

/** Every list above: the planted search word must appear in none of them. */
export const ALL_WORDS: readonly (readonly string[])[] = [
  GENRES,
  ADJECTIVES,
  NOUNS,
  VERBS,
  PREPOSITIONS,
  FIRST_NAMES,
  LAST_NAMES,
  MOMENTS,
  PLAYLIST_SUFFIXES,
  EMOJI,
];
